# A turn's chat history as request JSON read from the session file while the request is written.
#
# Sessions.history() holds the last messages as dicts (about 13 KB on the standard flash) for the
# whole Claude call; this keeps where each message sits in the file and writes it from there (loop.py's
# blank filter applied), reading and checking a line 1 KB at a time: a small heap has no 4 KB hole.
# A line this runtime wrote gives byte for byte what the request writer (llm/claude.py) gives for its dict;
# a line the other runtime wrote (CPython escapes non-ASCII, MicroPython does not) is sent as stored when
# its text is valid JSON the API takes, with the same meaning; any other line is parsed and escaped again.
import json

from mimi.jsontext import Streamed, escaped
from mimi.platform import const
from mimi.storage import files
from mimi.storage.session_lines import opening, parse_message, record_at, spans_backward

_READ_SLICE = const(512)  # bytes of a message read from flash and written at a time
_CHANGED = ("the conversation changed on flash while the reply was being prepared "
            "(session_clear or memory_consolidate); please send the message again")


def _framing(role):
    """(before the text, after it) of a message dict's JSON, in this runtime's key order."""
    head, tail = json.dumps({"role": role, "content": "@"}).split('"@"')
    return head.encode() + b'"', b'"' + tail.encode()


class HistoryPieces(Streamed):
    """The last `limit` valid messages of a session file (oldest first, opening with a user message,
    blank ones left out) as the JSON of their dicts joined by ", ": one item of a request's messages
    list (is_json: written as it is)."""

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
                for start, length in spans_backward(f, self.end):
                    record = record_at(f, start, length)
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
    elif f.read(at) != opening(role):
        raise RuntimeError(_CHANGED)
    while at and size > 0:
        data = f.read(min(_READ_SLICE, size))
        if not data:
            raise RuntimeError(_CHANGED)
        size -= len(data)
        yield data
    if size or at and f.read(1) != b'"':
        raise RuntimeError(_CHANGED)
