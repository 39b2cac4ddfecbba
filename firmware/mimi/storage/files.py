# File helpers for LittleFS and POSIX: atomic writes, bounded reads, appends, line streaming.
import os

from mimi import utf8
from mimi.platform import const

TMP_SUFFIX = ".tmp"
_ENOSPC = const(28)  # OSError errno of a full flash on LittleFS and POSIX alike
_CHUNK = const(512)  # bytes read per step when streaming a file
_S_IFDIR = const(0x4000)
_EEXIST = const(17)


def join(*parts):
    """Join path parts with single slashes: join("/data", "config/", "SOUL.md")."""
    path = ""
    for part in parts:
        if not part:
            continue
        if not path:
            path = part
        elif path.endswith("/"):
            path += part.lstrip("/")
        else:
            path += "/" + part.lstrip("/")
    return path


def is_full(exc):
    """True when an exception is the file system saying it has no room left."""
    if not isinstance(exc, OSError):
        return False
    code = getattr(exc, "errno", None)
    if code is None and exc.args:
        code = exc.args[0]
    return code == _ENOSPC


def _stat(path):
    try:
        return os.stat(path)
    except OSError:
        return None


def exists(path):
    return _stat(path) is not None


def is_dir(path):
    st = _stat(path)
    return st is not None and bool(st[0] & _S_IFDIR)


def size(path):
    """Size in bytes, -1 when the file is missing."""
    st = _stat(path)
    return -1 if st is None else st[6]


def makedirs(path):
    """mkdir -p: create path and every missing parent (MicroPython has no os.makedirs)."""
    current = "/" if path.startswith("/") else ""
    for name in path.split("/"):
        if not name:
            continue
        current = join(current, name)
        if is_dir(current):
            continue
        try:
            os.mkdir(current)
        except OSError:
            if not is_dir(current):  # a file of that name, or a real failure
                raise


# Writes that may change what the system prompt is made of: every write, remove and append through
# this module but those under a quiet folder (sessions and the audit log, written at every turn).
# agent/context.py keeps the prompt it built while changes() stays the same.
_changes = [0]
_quiet = []


def quiet(folder, is_folder=True):
    """Writes under folder (or to one file and its .tmp) never change the system prompt (not in changes())."""
    folder = folder.rstrip("/") + "/" if is_folder else folder
    if folder not in _quiet:
        _quiet.append(folder)


def changes():
    return _changes[0]


def _changed(path):
    for folder in _quiet:
        if path.startswith(folder):
            return
    _changes[0] += 1


def remove(path):
    """Remove a file; a missing one is not an error."""
    _changed(path)
    try:
        os.remove(path)
    except OSError:
        if exists(path):
            raise


def listdir(path):
    """Sorted names in a folder, [] when it is missing."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


utf8_boundary = utf8.boundary  # the longest prefix that does not end inside a character


def decode(data):
    """UTF-8 bytes to str, each invalid byte shown as U+FFFD (MicroPython's decode has no 'replace')."""
    return utf8.valid_text(data)


def read_json(path, max_bytes):
    """The JSON value a store keeps in path (a write cut short before, its .tmp, removed first); None when
    there is no file; ValueError when it is larger than max_bytes or not JSON (the store says so)."""
    from mimi import jsontext

    remove_stale_tmp(path)
    text = read_text(path, max_bytes + 1)
    if text is None:
        return None
    if len(text) > max_bytes:
        raise ValueError("larger than {} bytes".format(max_bytes))
    return jsontext.loads(text)


def read_text(path, max_bytes):
    """At most max_bytes of a file as str, cut at a character boundary; None when missing."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    try:
        # Ask for no more than the file holds: a small file must not cost a max_bytes buffer.
        want = min(max_bytes, size(path))
        data = f.read(want) if want > 0 else b""
    finally:
        f.close()
    if len(data) == max_bytes:
        data = data[: utf8_boundary(data)]
    return decode(data)


def ends_with_newline(path):
    """True when the file is missing, empty, or its last byte is a newline."""
    n = size(path)
    if n <= 0:
        return True
    with open(path, "rb") as f:
        f.seek(n - 1)
        return f.read(1) == b"\n"


def _as_bytes(chunk):
    return chunk.encode() if isinstance(chunk, str) else chunk


def _sync(f):
    f.flush()
    fsync = getattr(os, "fsync", None)  # CPython only; LittleFS commits on close
    if fsync is not None:
        fsync(f.fileno())


def write_atomic(path, data):
    """Replace path with data (str, bytes, or an iterable of str/bytes chunks) all or nothing.

    The data goes to path + ".tmp" first, then is renamed over path, so a crash leaves either
    the old or the new file complete. Any error removes the temporary file and is raised.
    """
    tmp = path + TMP_SUFFIX
    _changed(path)
    try:
        f = open(tmp, "wb")  # truncates a stale .tmp left by a power cut
    except OSError:
        _discard(tmp)  # a full flash may still have created it
        raise
    try:
        if isinstance(data, (str, bytes, bytearray)):
            f.write(_as_bytes(data))
        else:
            for chunk in data:
                f.write(_as_bytes(chunk))
        _sync(f)
        f.close()
    except BaseException:
        try:
            f.close()  # a full flash may refuse the commit again: the file is closed all the same
        except OSError:
            pass
        _discard(tmp)
        raise
    try:
        os.rename(tmp, path)  # replaces the target on LittleFS and POSIX
    except OSError as exc:
        if exc.args[0] != _EEXIST or not exists(path):
            _discard(tmp)
            raise
        os.remove(path)  # a filesystem whose rename refuses to replace the target
        os.rename(tmp, path)


def _discard(tmp):
    # Best effort: the error being raised matters more than a leftover .tmp (the next write truncates it).
    try:
        remove(tmp)
    except OSError:
        pass


def remove_stale_tmp(path):
    """Delete the leftover path + ".tmp" of an interrupted write_atomic, if any."""
    remove(path + TMP_SUFFIX)


def append_line(path, line):
    """Append line + newline in a single write, then flush. `line` may be a list of str pieces: written one
    after the other (a power cut between them tears the line, as one cut write would; readers skip it)."""
    _changed(path)
    with open(path, "ab") as f:
        if isinstance(line, str):
            f.write(_as_bytes(line + "\n"))
        else:
            for piece in line:
                f.write(_as_bytes(piece))
            f.write(b"\n")
        f.flush()


def iter_lines(path, line_max, start=0):
    """Yield the file's lines as bytes (without newline) from offset start, streaming.

    A line longer than line_max bytes is skipped without being held in memory: None is
    yielded in its place. A missing file yields nothing.
    """
    try:
        f = open(path, "rb")
    except OSError:
        return
    try:
        if start:
            f.seek(start)
        pending = b""
        overlong = False
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            parts = (pending + chunk).split(b"\n") if not overlong else chunk.split(b"\n")
            for i in range(len(parts) - 1):
                if overlong:
                    overlong = False  # this piece is the end of the long line
                    yield None
                else:
                    yield parts[i] if len(parts[i]) <= line_max else None
            pending = parts[-1]
            if overlong:
                pending = b""
            elif len(pending) > line_max:
                overlong = True
                pending = b""
        if overlong:
            yield None
        elif pending:
            yield pending if len(pending) <= line_max else None
    finally:
        f.close()
