# A session file's JSONL lines: a message's line written in pieces, lines found by offset, a line checked.
#
# line_for writes '{"role":...,"content":"...","ts":N}'; record_at() checks a line 1 KB at a time and says
# where its text sits, so the history (history_pieces), the trim (sessions) and consolidation send, copy and
# read a line without holding it whole: a small heap has no 4 KB hole.
import json

from mimi import jsontext
from mimi.platform import const
from mimi.storage import files
from mimi.utf8 import boundary, strict

SUFFIX = ".jsonl"  # a session file's name ends with this
LINE_MAX = const(16 * 1024)  # longer lines are cut when written and skipped when read
ROLES = ("user", "assistant")
_BLOCK = const(512)  # bytes read per step when looking for lines
_CUT_MARK = " [cut]"
_READ_SLICE = const(512)  # bytes of a line's text read and checked at a time
_HEAD = const(31)  # bytes of the longer line opening, opening("assistant")
_TAIL_MAX = const(32)  # bytes after a text's closing quote: ',"ts":N}'
_HIGH = const(0xD800)
_LOW = const(0xDC00)
_LAST = const(0xDFFF)
_SHORT = b'"\\/bfnrt'  # JSON's two-character escapes and the characters they stand for
_SHORT_CODES = b'"\\/\x08\x0c\n\r\t'
_HEX = b"0123456789abcdefABCDEF"


def _head(pieces, keep):
    """The first keep characters of a list of str pieces, as pieces (only the last one is cut)."""
    out = []
    for piece in pieces:
        if keep <= 0:
            break
        out.append(piece if len(piece) <= keep else piece[:keep])
        keep -= len(piece)
    return out


def line_for(role, content, ts, cap):
    """The JSONL line for one message as str pieces (a long reply is never escaped, encoded or written in one
    piece the size of the whole: a small heap has no such hole), its content cut until it fits in cap bytes.
    content is a str or a list of str pieces (a reply as it streamed in), which is never joined.
    Joined, the pieces are '{"role":...,"content":...,"ts":...}' exactly as one json.dumps per field gives."""
    content = [content] if isinstance(content, str) else content
    text = content
    keep = 0
    for piece in content:
        keep += len(piece)
    step = jsontext.ESCAPE_SLICE
    while True:
        line = ['{"role":' + json.dumps(role) + ',"content":"']
        for piece in text:
            for i in range(0, len(piece), step):
                line.append(json.dumps(piece[i : i + step])[1:-1])
        line.append('","ts":{}}}'.format(int(ts)))
        size = 0
        for piece in line:
            size += len(piece.encode())
        if size <= cap or not text:
            return line
        keep = keep * 3 // 4  # shrink the original, so the mark never makes it grow
        text = _head(content, keep) + [_CUT_MARK] if keep else []


def opening(role):
    """How line_for opens a line of this role, up to its text."""
    return b'{"role":"user","content":"' if role == "user" else b'{"role":"assistant","content":"'


def parse_message(line):
    """A JSONL line (bytes) to {"role", "content"}, or None when it is torn or not a message."""
    if not line:
        return None
    try:
        obj = jsontext.loads(line)
    except ValueError:  # also UnicodeError, a subclass on both runtimes
        return None
    if not isinstance(obj, dict):
        return None
    role = obj.get("role")
    content = obj.get("content")
    if role not in ROLES or not isinstance(content, str):
        return None
    return {"role": role, "content": content}


def spans_backward(f, end):
    """Yield (offset, length) of the lines of an open binary file from its end to its start.

    Reads _BLOCK bytes at a time and holds no line; it seeks before each read, so the caller
    may read the file between two steps."""
    stop = pos = end  # stop: where the line being looked for ends (its newline or the end)
    while pos > 0:
        step = _BLOCK if pos > _BLOCK else pos
        pos -= step
        f.seek(pos)
        chunk = f.read(step)
        cut = chunk.rfind(b"\n")
        while cut >= 0:
            yield pos + cut + 1, stop - pos - cut - 1
            stop = pos + cut
            cut = chunk.rfind(b"\n", 0, cut)
    yield 0, stop


def lines_backward(f, end):
    """Yield (offset, line) for the lines of an open binary file from its end to its start.

    Lines longer than LINE_MAX are skipped without being read; memory stays about LINE_MAX."""
    for start, length in spans_backward(f, end):
        if length <= LINE_MAX:
            f.seek(start)
            yield start, f.read(length)


def spans_forward(f, pos):
    """Yield (offset, length) of the lines of an open binary file from pos on, as files.iter_lines splits
    them (an empty line too, not an empty end); seeks before each read, so the caller may read between."""
    start = pos
    while True:
        f.seek(pos)
        chunk = f.read(_BLOCK)
        if not chunk:
            break
        cut = chunk.find(b"\n")
        while cut >= 0:
            yield start, pos + cut - start
            start = pos + cut + 1
            cut = chunk.find(b"\n", cut + 1)
        pos += len(chunk)
    if pos > start:
        yield start, pos - start


def last_ts(path):
    """The "ts" of a session file's newest valid message, 0 when it has none."""
    end = files.size(path)
    if end <= 0:
        return 0
    with open(path, "rb") as f:
        for _, line in lines_backward(f, end):
            if parse_message(line) is None:
                continue
            try:
                ts = jsontext.loads(line).get("ts")
            except ValueError:
                ts = None
            return ts if isinstance(ts, int) else 0
    return 0


def escape_at(data, at):
    """(code, length) of the JSON escape at data[at] (a backslash), a surrogate pair as one code;
    (0, 0) when it is not a valid escape, or not whole in data, or a lone surrogate half."""
    kind = data[at + 1 : at + 2]
    short = _SHORT.find(kind) if kind else -1
    if short >= 0:
        return _SHORT_CODES[short], 2
    code = _hex4(data, at + 2) if kind == b"u" else -1
    if code < 0 or _LOW <= code <= _LAST:
        return 0, 0
    if code < _HIGH:
        return code, 6
    low = _hex4(data, at + 8) if data[at + 6 : at + 8] == b"\\u" else -1
    if _LOW <= low <= _LAST:
        return 0x10000 + ((code - _HIGH) << 10) + (low - _LOW), 12
    return 0, 0


def _hex4(data, at):
    digits = data[at : at + 4]
    if len(digits) != 4:
        return -1
    for d in digits:
        if d not in _HEX:
            return -1
    return int(digits, 16)


def _blank(data):
    """True when UTF-8 bytes are only whitespace (as str.strip() sees it); None when not UTF-8."""
    try:
        return not str(data, "utf-8").strip()
    except UnicodeError:
        return None


def _ts_end(rest):
    """True for what line_for writes after a text: ',"ts":N}' with N a JSON integer."""
    digits = rest[6:-1]
    return (rest[:6] == b',"ts":' and rest[-1:] == b"}" and digits.isdigit()
            and (len(digits) == 1 or digits[:1] != b"0"))


def _stored(f, start, length, skip):
    """(escaped text size, blank) of a line as line_for writes it when its text can be sent
    as stored, None otherwise: read _READ_SLICE bytes at a time, each slice strict UTF-8 with no control
    byte, only valid escapes, surrogate escapes only in pairs, then ',"ts":N}' to the line's end."""
    pos = first = start + skip
    end = start + length
    blank = True
    while pos < end:
        f.seek(pos)
        data = f.read(min(_READ_SLICE, end - pos))
        last = pos + len(data) >= end
        limit = len(data) if last else boundary(data)
        at, closed = 0, False
        while True:
            slash = data.find(b"\\", at, limit)
            quote = data.find(b'"', at, limit if slash < 0 else slash)
            cut = quote if quote >= 0 else slash if slash >= 0 else limit
            if blank and cut > at:
                if 0x20 < data[at] < 0x7F:  # a printable ASCII character: not blank, nothing to decode
                    blank = False
                else:
                    blank = _blank(data[at:cut])
                    if blank is None:
                        return None
            if quote >= 0:
                closed = True
                break
            if slash < 0:
                break
            code, size = escape_at(data, slash)
            if not size:
                if last or slash + 12 <= len(data):
                    return None
                cut = slash  # the escape goes on in the next slice
                break
            if blank:
                blank = not chr(code).strip()
            at = slash + size
        if cut <= 0 and not closed:
            return None
        region = memoryview(data)[:cut] if cut < len(data) else data
        if region:
            if min(region) < 0x20:
                return None
            if max(region) >= 0x80:  # ASCII is valid UTF-8 as it is: only other text is decoded to check it
                try:
                    strict(bytes(region))
                except ValueError:
                    return None
        pos += cut
        if closed:
            if end - pos > _TAIL_MAX:
                return None
            f.seek(pos + 1)
            return (pos - first, blank) if _ts_end(f.read(end - pos - 1)) else None
    return None


def record_at(f, start, length):
    """(line offset, line length, text offset in the line or 0, escaped text size or -1 when blank, role)
    for a valid message line of an open binary file, else None.

    The text offset is 0 when the line is not one line_for writes with a text that can be
    sent as stored: such a line is parsed (here and when sent) and its text escaped again."""
    if length > LINE_MAX:
        return None  # as Sessions.history() reads a file
    f.seek(start)
    head = f.read(min(length, _HEAD))
    for role in ROLES:
        prefix = opening(role)
        if head.startswith(prefix):
            stored = _stored(f, start, length, len(prefix))
            if stored is not None:
                return (start, length, len(prefix), -1 if stored[1] else stored[0], role)
    f.seek(start)
    message = parse_message(f.read(length))
    if message is None:
        return None
    content = message["content"]
    size = 0
    for piece in jsontext.escaped(content):
        size += len(piece)
    # the API refuses empty turns (agent/loop.py skipped them)
    return (start, length, 0, size if content.strip() else -1, message["role"])

