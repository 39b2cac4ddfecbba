# A turn's chat history as request JSON read from the session file while the request is written.
#
# Sessions.history() holds the last messages as dicts (about 13 KB on the standard flash) for the
# whole Claude call; this keeps where each message sits in the file and writes it from there (loop.py's
# blank filter applied), reading and checking a line 1 KB at a time: a small heap has no 4 KB hole.
# A line this runtime wrote gives byte for byte what llm/claude.py's _json_value gives for its dict; a
# line the other runtime wrote (CPython escapes non-ASCII, MicroPython does not) is sent as stored when
# its text is valid JSON the API takes, with the same meaning; any other line is parsed and escaped again.
import json

from mimi.jsontext import escaped
from mimi.platform import const
from mimi.storage import files
from mimi.storage.sessions import LINE_MAX, ROLES, _spans_backward, parse_message
from mimi.utf8 import boundary, strict

_READ_SLICE = const(1024)  # bytes of a message read from flash and written at a time
_HEAD = const(31)  # bytes of the longer line opening, _prefix("assistant")
_TAIL_MAX = const(32)  # bytes after a text's closing quote: ',"ts":N}'
_HIGH = const(0xD800)
_LOW = const(0xDC00)
_LAST = const(0xDFFF)
_SHORT = b'"\\/bfnrt'  # JSON's two-character escapes and the characters they stand for
_SHORT_CODES = b'"\\/\x08\x0c\n\r\t'
_HEX = b"0123456789abcdefABCDEF"
_CHANGED = ("the conversation changed on flash while the reply was being prepared "
            "(session_clear or memory_consolidate); please send the message again")


def _framing(role):
    """(before the text, after it) of a message dict's JSON, in this runtime's key order."""
    head, tail = json.dumps({"role": role, "content": "@"}).split('"@"')
    return head.encode() + b'"', b'"' + tail.encode()


def _prefix(role):
    # how sessions._line_for opens a line
    return b'{"role":"user","content":"' if role == "user" else b'{"role":"assistant","content":"'


def _escape(data, at):
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
    """True for what sessions._line_for writes after a text: ',"ts":N}' with N a JSON integer."""
    digits = rest[6:-1]
    return (rest[:6] == b',"ts":' and rest[-1:] == b"}" and digits.isdigit()
            and (len(digits) == 1 or digits[:1] != b"0"))


def _stored(f, start, length, skip):
    """(escaped text size, blank) of a line as sessions._line_for writes it when its text can be sent
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
                blank = _blank(data[at:cut])
                if blank is None:
                    return None
            if quote >= 0:
                closed = True
                break
            if slash < 0:
                break
            code, size = _escape(data, slash)
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
        region = data[:cut] if cut < len(data) else data
        if region:
            if min(region) < 0x20:
                return None
            try:
                strict(region)
            except ValueError:
                return None
        pos += cut
        if closed:
            if end - pos > _TAIL_MAX:
                return None
            f.seek(pos + 1)
            return (pos - first, blank) if _ts_end(f.read(end - pos - 1)) else None
    return None


def _record(f, start, length):
    """(line offset, line length, text offset in the line or 0, escaped text size or -1 when blank, role)
    for a valid message line, else None.

    The text offset is 0 when the line is not one sessions._line_for writes with a text that can be
    sent as stored: such a line is parsed (here and when sent) and its text escaped again."""
    if length > LINE_MAX:
        return None  # as sessions.history() reads a file
    f.seek(start)
    head = f.read(min(length, _HEAD))
    for role in ROLES:
        prefix = _prefix(role)
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
    for piece in escaped(content):
        size += len(piece)
    # the API refuses empty turns (agent/loop.py skipped them)
    return (start, length, 0, size if content.strip() else -1, message["role"])


class HistoryPieces:
    """The last `limit` valid messages of a session file (oldest first, opening with a user message,
    blank ones left out) as the JSON of their dicts joined by ", ": one item of a request's messages
    list (llm/claude.py writes objects with is_json and chunks() as they are)."""

    is_json = True

    def __init__(self, path, limit):
        self.path = path
        self.limit = limit
        self._scan()

    def _scan(self):
        self.end = files.size(self.path)
        newest_first = []
        if self.end > 0 and self.limit > 0:
            with open(self.path, "rb") as f:
                for start, length in _spans_backward(f, self.end):
                    record = _record(f, start, length)
                    if record is not None:
                        newest_first.append(record)
                        if len(newest_first) >= self.limit:
                            break
        while newest_first and newest_first[-1][4] != "user":
            newest_first.pop()  # the model expects the conversation to open with the user
        newest_first.reverse()
        self.records = [r for r in newest_first if r[3] >= 0]
        size = 2 * (len(self.records) - 1) if self.records else 0  # the ", " between messages
        for record in self.records:
            head, tail = _framing(record[4])
            size += len(head) + record[3] + len(tail)
        self.size = size

    def __len__(self):
        # Counted before each attempt sends a byte: a session rewritten meanwhile is read again.
        if files.size(self.path) != self.end:
            self._scan()
            if not self.records:
                raise RuntimeError(_CHANGED)
        return self.size

    def chunks(self):
        if files.size(self.path) != self.end:
            raise RuntimeError(_CHANGED)
        with open(self.path, "rb") as f:
            for i, record in enumerate(self.records):
                head, tail = _framing(record[4])
                yield b", " + head if i else head
                yield from _text(f, record)
                yield tail


def _text(f, record):
    """The message's escaped text: from the line as stored, or parsed and escaped again."""
    start, length, at, size, role = record
    f.seek(start)
    if not at:
        message = parse_message(f.read(length))
        if message is None or message["role"] != role:
            raise RuntimeError(_CHANGED)
        for piece in escaped(message["content"]):
            size -= len(piece)
            yield piece
    elif f.read(at) != _prefix(role):
        raise RuntimeError(_CHANGED)
    while at and size > 0:
        data = f.read(min(_READ_SLICE, size))
        if not data:
            raise RuntimeError(_CHANGED)
        size -= len(data)
        yield data
    if size or at and f.read(1) != b'"':
        raise RuntimeError(_CHANGED)
