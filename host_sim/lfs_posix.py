# CPython only: routes the firmware's file calls under the mount point to a littlefs-python file system.
# The runner installs it once, before the firmware starts; MicroPython needs none of this (vfs.mount).
import builtins
import errno
import importlib.abc
import importlib.util
import io
import os
import sys

from littlefs import LittleFSError, UserContext, lfs

_TYPE_DIR = 2  # LFS_TYPE_DIR
_S_IFDIR = 0x4000  # stat modes as MicroPython reports them
_S_IFREG = 0x8000
_FD_BASE = -1000  # fileno() of a LittleFS file: negative, so no real descriptor is ever hit


def _lfs_flags(mode):
    # As POSIX open(): littlefs-python's own "a" forgets to create the file.
    F = lfs.LFSFileFlag
    access = (F.rdonly | F.wronly) if "+" in mode else (F.rdonly if "r" in mode else F.wronly)
    if "w" in mode:
        return access | F.creat | F.trunc
    if "a" in mode:
        return access | F.creat | F.append
    if "x" in mode:
        return access | F.creat | F.excl
    return access


class WriteThroughContext(UserContext):
    """The image file as LittleFS's flash: every program and erase is an unbuffered write."""

    def __init__(self, path):
        self._f = open(path, "r+b", buffering=0)
        self.size = os.fstat(self._f.fileno()).st_size
        self.in_size = self.size

    def read(self, cfg, block, off, size):
        self._f.seek(block * cfg.block_size + off)
        data = self._f.read(size)
        return bytearray(data + b"\xff" * (size - len(data)))

    def prog(self, cfg, block, off, data):
        self._f.seek(block * cfg.block_size + off)
        self._f.write(data)
        return 0

    def erase(self, cfg, block):
        self._f.seek(block * cfg.block_size)
        self._f.write(b"\xff" * cfg.block_size)
        return 0

    def sync(self, cfg):
        return 0

    def close(self):
        self._f.close()


def os_error(exc, path=None):
    """A LittleFSError as the OSError MicroPython raises (errno = -code)."""
    code = -exc.code if isinstance(exc, LittleFSError) else errno.EIO
    if path is None:
        return OSError(code, os.strerror(code))
    return OSError(code, os.strerror(code), path)


class LfsFile(io.RawIOBase):
    """An open LittleFS file; binary, unbuffered: each write is one lfs_file_write, as on the chip."""

    def __init__(self, shim, handle, mode, path):
        super().__init__()
        self._shim = shim
        self._fh = handle
        self._mode = mode
        self.name = path

    def _call(self, fn, *args):
        if self._fh is None:
            raise ValueError("I/O operation on closed file")
        try:
            return fn(self._shim.fs.fs, self._fh, *args)
        except LittleFSError as exc:
            raise os_error(exc, self.name) from None

    def readable(self):
        return "r" in self._mode or "+" in self._mode

    def writable(self):
        return "r" not in self._mode or "+" in self._mode

    def seekable(self):
        return True

    def readinto(self, buf):
        data = self._call(lfs.file_read, len(buf))
        buf[: len(data)] = data
        return len(data)

    def readall(self):
        left = self._call(lfs.file_size) - self._call(lfs.file_tell)
        return bytes(self._call(lfs.file_read, left)) if left > 0 else b""

    def write(self, data):
        return self._call(lfs.file_write, bytes(data))

    def seek(self, offset, whence=0):
        return self._call(lfs.file_seek, offset, whence)

    def tell(self):
        return self._call(lfs.file_tell)

    def flush(self):
        if self._fh is not None and self.writable():
            self._call(lfs.file_sync)

    def fileno(self):
        return self._shim.fd_of(self)

    def close(self):
        if self._fh is None:
            return
        handle, self._fh = self._fh, None
        self._shim.forget(self)
        super().close()  # flush() sees no handle: the close below is the one commit
        try:
            lfs.file_close(self._shim.fs.fs, handle)  # LittleFS frees the handle even when this fails
        except LittleFSError as exc:
            raise os_error(exc, self.name) from None


class _Loader(importlib.abc.SourceLoader):
    def __init__(self, shim, path):
        self._shim = shim
        self._path = path

    def get_filename(self, fullname):
        return self._path

    def get_data(self, path):
        with self._shim.open(path, "rb") as f:
            return f.read()


class _Finder(importlib.abc.PathEntryFinder):
    """Imports the owner's tool_<name>.py from a folder on the image (the registry's sys.path entry)."""

    def __init__(self, shim, folder):
        self._shim = shim
        self._folder = folder.rstrip("/")

    def find_spec(self, fullname, target=None):
        path = self._folder + "/" + fullname.rpartition(".")[2] + ".py"
        try:
            self._shim.stat(path)
        except OSError:
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(self._shim, path), origin=path)

    def invalidate_caches(self):
        pass


class Shim:
    """open/os.* for paths under `mount` go to `fs`; every other path to the real calls."""

    def __init__(self, fs, mount):
        self.fs = fs
        self.mount = mount.rstrip("/")
        self.real = {}
        self._fds = {}

    def owns(self, path):
        if not isinstance(path, str):
            return False
        return path == self.mount or path.startswith(self.mount + "/")

    def inner(self, path):
        return path[len(self.mount):] or "/"

    def _do(self, fn, path, *args):
        try:
            return fn(self.fs.fs, *args)
        except LittleFSError as exc:
            raise os_error(exc, path) from None

    def fd_of(self, f):
        fd = _FD_BASE - id(f) % 1000000
        self._fds[fd] = f
        return fd

    def forget(self, f):
        for fd in [fd for fd, g in self._fds.items() if g is f]:
            del self._fds[fd]

    def open(self, path, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True,
             opener=None):
        flags = mode.replace("t", "")
        handle = self._do(lfs.file_open, path, self.inner(path), _lfs_flags(flags))
        raw = LfsFile(self, handle, flags, path)
        if "b" in mode:
            return raw
        buffered = io.BufferedRandom(raw) if "+" in mode else (
            io.BufferedReader(raw) if "r" in mode else io.BufferedWriter(raw))
        return io.TextIOWrapper(buffered, encoding or "utf-8", errors, newline)

    def stat(self, path):
        st = self._do(lfs.stat, path, self.inner(path))
        mode = _S_IFDIR if st.type == _TYPE_DIR else _S_IFREG
        return os.stat_result((mode, 0, 0, 0, 0, 0, st.size, 0, 0, 0))

    def ilistdir(self, path):
        handle = self._do(lfs.dir_open, path, self.inner(path))
        try:
            while True:
                info = self._do(lfs.dir_read, path, handle)
                if not info:
                    return
                if info.name not in (".", ".."):
                    yield info.name, (_S_IFDIR if info.type == _TYPE_DIR else _S_IFREG), 0, info.size
        finally:
            lfs.dir_close(self.fs.fs, handle)

    def listdir(self, path):
        return [entry[0] for entry in self.ilistdir(path)]

    def statvfs(self, path):
        cfg = self.fs.cfg
        used = self._do(lfs.fs_size, path)
        free = max(cfg.block_count - used, 0)
        return os.statvfs_result((cfg.block_size, cfg.block_size, cfg.block_count, free, free,
                                  0, 0, 0, 0, cfg.name_max))

    def remove(self, path):
        self._do(lfs.remove, path, self.inner(path))

    def rename(self, src, dst):
        if self.owns(src) != self.owns(dst):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), src)
        self._do(lfs.rename, src, self.inner(src), self.inner(dst))

    def mkdir(self, path, mode=0o777):
        self._do(lfs.mkdir, path, self.inner(path))

    def fsync(self, fd):
        f = self._fds.get(fd)
        if f is not None:
            f.flush()

    def path_hook(self, entry):
        if not self.owns(entry):
            raise ImportError("not on the LittleFS image")
        return _Finder(self, entry)


def _routed(shim, name, fn):
    def call(path, *args, **kwargs):
        if shim.owns(path):
            return getattr(shim, name)(path, *args, **kwargs)
        return fn(path, *args, **kwargs)

    return call


def install(fs, mount):
    """Route open() and the os calls the firmware makes for paths under mount to fs."""
    shim = Shim(fs, mount)
    shim.real["open"] = builtins.open
    builtins.open = _routed(shim, "open", builtins.open)
    for name, own in (("stat", "stat"), ("listdir", "listdir"), ("statvfs", "statvfs"),
                      ("remove", "remove"), ("unlink", "remove"), ("mkdir", "mkdir"),
                      ("rmdir", "remove")):
        shim.real[name] = getattr(os, name)
        setattr(os, name, _routed(shim, own, getattr(os, name)))
    os.ilistdir = _routed(shim, "ilistdir", lambda path="": (
        (e.name, _S_IFDIR if e.is_dir() else _S_IFREG, 0, 0) for e in os.scandir(path)))
    real_rename = os.rename
    os.rename = lambda src, dst: shim.rename(src, dst) if shim.owns(src) or shim.owns(dst) \
        else real_rename(src, dst)
    real_fsync = os.fsync
    os.fsync = lambda fd: shim.fsync(fd) if isinstance(fd, int) and fd <= _FD_BASE else real_fsync(fd)
    sys.path_hooks.insert(0, shim.path_hook)
    sys.path_importer_cache.clear()
    return shim
