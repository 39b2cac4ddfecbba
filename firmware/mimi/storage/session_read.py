# A session line read in small slices for consolidation: its short sha, its checked text decoded.
import binascii
import hashlib

from mimi import jsontext
from mimi.platform import const
from mimi.storage.session_lines import escape_at, record_at, spans_forward
from mimi.utf8 import boundary

_SLICE = const(512)  # bytes of a line read (hashed, decoded) at a time: a small heap has no 4 KB hole


def opened(path):
    """The session file open for reading, None when it is missing."""
    try:
        return open(path, "rb")
    except OSError:
        return None


def records(f):
    """session_lines.record_at of each valid message line of an open session file, oldest first."""
    for start, length in spans_forward(f, 0):
        record = record_at(f, start, length)
        if record is not None:
            yield record


def sha(f, start, length):
    """The short sha256 of a line of an open file, read _SLICE bytes at a time."""
    digest = hashlib.sha256()
    while length > 0:
        f.seek(start)
        data = f.read(min(_SLICE, length))
        if not data:
            break
        digest.update(data)
        start += len(data)
        length -= len(data)
    return binascii.hexlify(digest.digest()[:8]).decode()


def decoded(f, pos, size):
    """The escaped JSON text of `size` bytes at pos, checked by session_lines.record_at, as str pieces of under
    _SLICE bytes: each slice cut at a UTF-8 and an escape boundary, read as the JSON string '"' + slice + '"'."""
    while size > 0:
        f.seek(pos)
        data = f.read(min(_SLICE, size))
        if not data:
            raise ValueError("the line changed")
        cut = len(data) if len(data) >= size else _cut(data)
        if not cut:
            raise ValueError("no boundary")
        yield jsontext.loads(b'"' + data[:cut] + b'"')
        pos += cut
        size -= cut


def _cut(data):
    """Length of the longest prefix of checked escaped text that ends neither inside a UTF-8 character nor
    inside an escape (a surrogate pair's two escapes are one)."""
    end = boundary(data)
    at = data.find(b"\\", 0, end)
    while at >= 0:
        size = escape_at(data, at)[1]
        if not size or at + size > end:
            return at
        at = data.find(b"\\", at + size, end)
    return end
