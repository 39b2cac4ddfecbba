# A session file read by offset in small slices: its lines forward, a line's sha, text decoded, lines copied.
import binascii
import hashlib

from mimi import jsontext
from mimi.platform import const
from mimi.storage.history_pieces import _escape, _record
from mimi.utf8 import boundary

_BLOCK = const(1024)  # bytes read per step when scanning a file forwards
_SLICE = const(512)  # bytes of a line read (hashed, decoded, copied) at a time: a small heap has no 4 KB hole


def _open(path):
    try:
        return open(path, "rb")
    except OSError:
        return None


def _spans_forward(f, pos):
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


def _valid_from(path, cut):
    """The valid lines of a session file after the offset cut, copied _SLICE bytes at a time."""
    with open(path, "rb") as f:
        for start, length in _spans_forward(f, cut):
            if _record(f, start, length) is not None:
                while length > 0:
                    f.seek(start)
                    data = f.read(min(_SLICE, length))
                    if not data:
                        raise RuntimeError("the conversation changed while it was rewritten")
                    start += len(data)
                    length -= len(data)
                    yield data
                yield b"\n"


def _sha(f, start, length):
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


def _decoded(f, pos, size):
    """The escaped JSON text of `size` bytes at pos, checked by _record, as str pieces of under _SLICE bytes."""
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
        size = _escape(data, at)[1]
        if not size or at + size > end:
            return at
        at = data.find(b"\\", at + size, end)
    return end

