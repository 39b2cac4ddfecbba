# A turn's chat history as request JSON read from the session file while the request is written.
#
# Sessions.history() holds the last messages as dicts (about 13 KB on the standard flash) for the
# whole Claude call; this keeps where each message sits in the file and writes it from there, byte
# for byte what llm/claude.py's _json_value gives for the dicts (loop.py's blank filter applied).
import json

from mimi.platform import const
from mimi.storage import files
from mimi.storage.sessions import _lines_backward, parse_message

_READ_SLICE = const(1024)  # bytes of a message read from flash and written at a time
_ESCAPE_SLICE = const(1024)  # characters of a long message escaped at a time
_CHANGED = ("the conversation changed on flash while the reply was being prepared "
            "(session_clear or memory_consolidate); please send the message again")


def _escaped(content):
    """json.dumps(content)[1:-1] as UTF-8 slices: the text as this runtime writes it in a request."""
    for i in range(0, len(content), _ESCAPE_SLICE):
        yield json.dumps(content[i : i + _ESCAPE_SLICE])[1:-1].encode()


def _framing(role):
    """(before the text, after it) of a message dict's JSON, in this runtime's key order."""
    head, tail = json.dumps({"role": role, "content": "@"}).split('"@"')
    return head.encode() + b'"', b'"' + tail.encode()


def _prefix(role):
    return b'{"role":"' + role.encode() + b'","content":"'  # how sessions._line_for opens a line


def _record(start, line, message):
    """(line offset, line length, text offset in the line or 0, escaped text bytes or -1 when blank, role).

    The text offset is 0 unless the line holds the text exactly as this runtime escapes it (a line
    written by the other runtime, or mended by jsontext, is parsed again when sent)."""
    role, content = message["role"], message["content"]
    if not content.strip():  # the API refuses empty turns (agent/loop.py skipped them)
        return (start, len(line), 0, -1, role)
    prefix = _prefix(role)
    at = len(prefix) if line.startswith(prefix) else 0
    size = 0
    for piece in _escaped(content):
        if at and not line.startswith(piece, at + size):
            at = 0
        size += len(piece)
    if at and line[at + size : at + size + 1] != b'"':
        at = 0
    return (start, len(line), at, size, role)


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
                for start, line in _lines_backward(f, self.end):
                    message = parse_message(line)
                    if message is not None:
                        newest_first.append(_record(start, line, message))
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
        for piece in _escaped(message["content"]):
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
