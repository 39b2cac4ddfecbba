# Chat histories as JSONL files, one per channel and chat, read from the tail and kept bounded.
import json

from mimi import jsontext, platform
from mimi.platform import const
from mimi.storage import files, space

SESSION_MAX_BYTES = const(32 * 1024)  # a session file over this is trimmed to about half
HISTORY_LIMIT = const(20)  # messages handed to the model by default
CONSOLIDATE_AT = HISTORY_LIMIT  # more messages than the model is shown: agent/consolidate.py summarises the oldest
CHAT_ID_MAX = const(64)  # characters in a chat id
LINE_MAX = const(16 * 1024)  # longer lines are cut when written and skipped when read
SUFFIX = ".jsonl"
JOURNAL_SUFFIX = ".summary"  # <stem>.summary: a consolidation's summary, kept until it is applied
ROLES = ("user", "assistant")
_BLOCK = const(1024)  # bytes read per step when scanning a file backwards
_COUNT_MAX_BYTES = const(256 * 1024)  # list() counts lines only in files up to this size
_CUT_MARK = " [cut]"


def _safe_byte(b):
    return (
        0x30 <= b <= 0x39 or 0x41 <= b <= 0x5A or 0x61 <= b <= 0x7A or b == 0x5F or b == 0x2D
    )


def encode_id(chat_id):
    """Chat id to a file-name-safe string: [A-Za-z0-9_-] kept, every other byte as %XX."""
    out = []
    for b in str(chat_id).encode():
        out.append(chr(b) if _safe_byte(b) else "%{:02X}".format(b))
    return "".join(out)


def decode_id(text):
    """encode_id's inverse: the chat id a session file name holds."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] == "%" and i + 3 <= len(text):
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(text[i]))
            i += 1
    return files.decode(bytes(out))


def check_channel(channel):
    ok = isinstance(channel, str) and len(channel) > 0
    for c in channel if ok else "":
        if not ("a" <= c <= "z" or "0" <= c <= "9"):
            ok = False
            break
    if not ok:
        raise ValueError(
            "channel name must be lowercase letters and digits, got {!r}".format(channel)
        )
    return channel


def check_chat_id(chat_id):
    chat_id = str(chat_id)
    if not chat_id:
        raise ValueError("chat id must not be empty")
    if len(chat_id) > CHAT_ID_MAX:
        raise ValueError("chat id is longer than {} characters".format(CHAT_ID_MAX))
    return chat_id


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


_ESCAPE_SLICE = const(1024)  # characters of a long message escaped at a time


def _head(pieces, keep):
    """The first keep characters of a list of str pieces, as pieces (only the last one is cut)."""
    out = []
    for piece in pieces:
        if keep <= 0:
            break
        out.append(piece if len(piece) <= keep else piece[:keep])
        keep -= len(piece)
    return out


def _line_for(role, content, ts, cap):
    """The JSONL line for one message as str pieces (a long reply is never escaped, encoded or written in one
    piece the size of the whole: a small heap has no such hole), its content cut until it fits in cap bytes.
    content is a str or a list of str pieces (a reply as it streamed in), which is never joined.
    Joined, the pieces are '{"role":...,"content":...,"ts":...}' exactly as one json.dumps per field gives."""
    content = [content] if isinstance(content, str) else content
    text = content
    keep = 0
    for piece in content:
        keep += len(piece)
    while True:
        line = ['{"role":' + json.dumps(role) + ',"content":"']
        for piece in text:
            for i in range(0, len(piece), _ESCAPE_SLICE):
                line.append(json.dumps(piece[i : i + _ESCAPE_SLICE])[1:-1])
        line.append('","ts":{}}}'.format(int(ts)))
        size = 0
        for piece in line:
            size += len(piece.encode())
        if size <= cap or not text:
            return line
        keep = keep * 3 // 4  # shrink the original, so the mark never makes it grow
        text = _head(content, keep) + [_CUT_MARK] if keep else []


def _spans_backward(f, end):
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


def _lines_backward(f, end):
    """Yield (offset, line) for the lines of an open binary file from its end to its start.

    Lines longer than LINE_MAX are skipped without being read; memory stays about LINE_MAX."""
    for start, length in _spans_backward(f, end):
        if length <= LINE_MAX:
            f.seek(start)
            yield start, f.read(length)


class Sessions:
    """Append-only chat histories under sessions_dir, one JSONL file per chat."""

    def __init__(self, sessions_dir, max_bytes=SESSION_MAX_BYTES):
        self.dir = sessions_dir
        self.max_bytes = max_bytes
        # a new line always fits in the half kept by a trim
        self.line_cap = min(LINE_MAX, max_bytes // 2 - 1)

    def file_name(self, channel, chat_id):
        return "{}_{}{}".format(check_channel(channel), encode_id(check_chat_id(chat_id)), SUFFIX)

    def path(self, channel, chat_id):
        return files.join(self.dir, self.file_name(channel, chat_id))

    def stem(self, channel, chat_id):
        return self.file_name(channel, chat_id)[: -len(SUFFIX)]

    def journal_path(self, stem):
        return files.join(self.dir, stem + JOURNAL_SUFFIX)

    def may_consolidate(self, channel, chat_id):
        """Whether agent/consolidate.py may have work for a chat, told after every turn without importing it:
        a journal waits, or the file has more lines than CONSOLIDATE_AT (its due() then counts messages).
        Cron and heartbeat turns (channel "system") are never consolidated."""
        if channel == "system":
            return False
        stem = self.stem(channel, chat_id)
        if files.exists(self.journal_path(stem)):
            return True
        path = files.join(self.dir, stem + SUFFIX)
        return files.size(path) > 0 and _count_lines(path) > CONSOLIDATE_AT

    def exists(self, channel, chat_id):
        return files.exists(self.path(channel, chat_id))

    def append(self, channel, chat_id, role, content, ts=None):
        """Add one message (content: a str, or a Text of str pieces); trims the file when it grows over max_bytes."""
        if role not in ROLES:
            raise ValueError("role must be 'user' or 'assistant', got {!r}".format(role))
        if not isinstance(content, str):
            content = getattr(content, "pieces", None)  # a reply's pieces (llm/text.py Text): never joined
            if not isinstance(content, list):
                raise ValueError("message content must be text")
        path = self.path(channel, chat_id)
        line = _line_for(role, content, platform.unix_time() if ts is None else ts, self.line_cap)
        if files.size(path) < 0:
            files.makedirs(self.dir)  # first message of this chat: make sure the folder is there
        elif not files.ends_with_newline(path):
            line.insert(0, "\n")  # never glue a message to a line torn by a power cut
        what = "the conversation " + self.file_name(channel, chat_id)[: -len(SUFFIX)]
        space.guarded(lambda: files.append_line(path, line), what, (path,))
        total = files.size(path)
        if total > self.max_bytes:  # the trim is guarded apart: a retried append would add the line twice
            from mimi.storage import session_trim  # here: session_trim imports history_pieces, which imports us

            space.guarded(lambda: session_trim.trim(path, files.size(path), self.max_bytes), what, (path,))

    def newest(self, channel, chat_id):
        """Yield the chat's valid messages newest first, read from the file's end a block at a time."""
        path = self.path(channel, chat_id)
        end = files.size(path)
        if end <= 0:
            return
        with open(path, "rb") as f:
            for _, line in _lines_backward(f, end):
                message = parse_message(line)
                if message is not None:
                    yield message

    def history(self, channel, chat_id, limit=HISTORY_LIMIT):
        """The last `limit` valid messages, oldest first, starting with a user message."""
        path = self.path(channel, chat_id)
        newest_first = []
        end = files.size(path)
        if end <= 0 or limit <= 0:
            return newest_first
        with open(path, "rb") as f:
            for _, line in _lines_backward(f, end):
                message = parse_message(line)
                if message is not None:
                    newest_first.append(message)
                    if len(newest_first) >= limit:
                        break
        while newest_first and newest_first[-1]["role"] != "user":
            newest_first.pop()  # the model expects the conversation to open with the user
        newest_first.reverse()
        return newest_first

    def history_pieces(self, channel, chat_id, limit=HISTORY_LIMIT):
        """history() without its blank messages, as JSON read from the file while a request is written
        (storage/history_pieces.py); None when there is none."""
        from mimi.storage.history_pieces import HistoryPieces

        pieces = HistoryPieces(self.path(channel, chat_id), limit)
        return pieces if pieces.records else None

    def clear(self, name_or_chat_id):
        """Remove a session by file stem ("telegram_42"), or every channel's file of a chat id.

        Returns the number of files removed.
        """
        target = str(name_or_chat_id)
        if not target:
            return 0
        stems = [n[: -len(SUFFIX)] for n in files.listdir(self.dir) if n.endswith(SUFFIX)]
        chosen = [s for s in stems if s == target]
        if not chosen:
            encoded = encode_id(target)
            chosen = [s for s in stems if "_" in s and s.split("_", 1)[1] == encoded]
        for stem in chosen:
            path = files.join(self.dir, stem + SUFFIX)
            files.remove(path)
            files.remove_stale_tmp(path)
        return len(chosen)

    def list(self):
        """[(stem, size_bytes, line_count or None)] sorted by stem; no count for huge files."""
        out = []
        for name in files.listdir(self.dir):
            if not name.endswith(SUFFIX):
                continue
            path = files.join(self.dir, name)
            size = files.size(path)
            lines = _count_lines(path) if size <= _COUNT_MAX_BYTES else None
            out.append((name[: -len(SUFFIX)], size, lines))
        return out


def last_ts(path):
    """The "ts" of a session file's newest valid message, 0 when it has none."""
    end = files.size(path)
    if end <= 0:
        return 0
    with open(path, "rb") as f:
        for _, line in _lines_backward(f, end):
            if parse_message(line) is None:
                continue
            try:
                ts = jsontext.loads(line).get("ts")
            except ValueError:
                ts = None
            return ts if isinstance(ts, int) else 0
    return 0


def _count_lines(path):
    count = 0
    last = b"\n"
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_BLOCK)
            if not chunk:
                break
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count if last == b"\n" else count + 1
