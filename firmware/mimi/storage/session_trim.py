# A session file over its cap rewritten with its newest valid lines, found by offset and copied in blocks.
from mimi.platform import const
from mimi.storage import files
from mimi.storage.history_pieces import _record
from mimi.storage.session_read import _spans_forward

_BLOCK = const(1024)  # bytes read and copied per step


def _copy(f, buf, start, end):
    """Yield the bytes [start, end) of an open file, then a newline, through buf (nothing when start < 0)."""
    if start < 0:
        return
    view = memoryview(buf)
    while start < end:
        f.seek(start)
        n = f.readinto(view[: min(len(buf), end - start)])
        if not n:
            raise RuntimeError("the conversation changed while it was trimmed")
        start += n
        yield view[:n]
    yield b"\n"


def _keep_from(path, total, max_bytes):
    """Offset of the first line starting at or after total - max_bytes // 2."""
    pos = total - max_bytes // 2
    if pos <= 0:
        return 0
    with open(path, "rb") as f:
        f.seek(pos - 1)
        while True:
            chunk = f.read(_BLOCK)
            if not chunk:
                break
            cut = chunk.find(b"\n")
            if cut >= 0:
                return pos + cut
            pos += len(chunk)
    return total


def trim(path, total, max_bytes):
    """Rewrite the file atomically with its newest valid lines (about max_bytes / 2).

    Lines are found by offset and checked and copied _BLOCK bytes at a time (history_pieces._record:
    a line in sessions._line_for's form is never read whole; a small heap has no 4 KB hole). Each run of
    adjacent valid lines is copied as it stands, each kept line ending in a newline."""
    start = _keep_from(path, total, max_bytes)

    def kept():
        with open(path, "rb") as f:
            buf = bytearray(_BLOCK)
            run, end = -1, -2  # the valid lines not copied yet: [run, end), their last newline left out
            for at, length in _spans_forward(f, start):
                if _record(f, at, length) is None:
                    continue
                if at != end + 1:
                    yield from _copy(f, buf, run, end)
                    run = at
                end = at + length
            yield from _copy(f, buf, run, end)

    files.write_atomic(path, kept())
