# The chip's LittleFS flash for the host runner: an image file mounted at MOUNT, on both runtimes.
# MicroPython: vfs.VfsLfs2 over a file-backed block device. CPython: littlefs-python over a
# write-through context, reached through the file-call shim in lfs_posix.py. Every program and
# erase goes to the image file at once, so a killed process leaves what a power cut leaves.
import os

MOUNT = "/lfs"  # where the image appears; the firmware's /data and /tools live under it
BLOCK_SIZE = 4096  # one flash sector, as esp32.Partition
# As MicroPython's VfsLfs2 formats (extmod/vfs_lfs.c defaults; tools/fsimage.py proves them).
READ_SIZE = 32
PROG_SIZE = 32
LOOKAHEAD_SIZE = 32
CACHE_SIZE = 128  # 4 * max(read, prog): what vfs_lfs.c picks
BLOCK_CYCLES = 100
NAME_MAX = 255
MIN_BLOCKS = 4  # LittleFS needs two superblock blocks and room for one file
_ERASED = b"\xff" * BLOCK_SIZE
_BD_SYNC = 3
_BD_BLOCK_COUNT = 4
_BD_BLOCK_SIZE = 5
_BD_ERASE = 6


def parse_size(text):
    """Bytes from "1048576", "0x100000", "64K" or "10M"."""
    text = str(text).strip()
    scale = 1
    if text[-1:] in ("K", "k", "M", "m"):
        scale = 1024 if text[-1] in "Kk" else 1024 * 1024
        text = text[:-1]
    return int(text, 0) * scale


def vfs_partition_size(csv_path):
    """Size of the `vfs` partition in an ESP-IDF partition table CSV."""
    with open(csv_path) as f:
        for line in f:
            cells = [cell.strip() for cell in line.split("#", 1)[0].split(",")]
            if len(cells) >= 5 and cells[0] == "vfs":
                return parse_size(cells[4])
    raise ValueError("no vfs partition in " + csv_path)


def check_size(size):
    if size % BLOCK_SIZE or size < MIN_BLOCKS * BLOCK_SIZE:
        raise ValueError("--flash-size must be a multiple of {} bytes, at least {}".format(
            BLOCK_SIZE, MIN_BLOCKS * BLOCK_SIZE))
    return size


def _file_size(path):
    try:
        return os.stat(path)[6]
    except OSError:
        return -1


def create_image(path, size):
    """A new image file of `size` bytes, every block erased (0xFF) as a new chip's flash."""
    with open(path, "wb") as f:
        for _ in range(size // BLOCK_SIZE):
            f.write(_ERASED)


class FileBlocks:
    """A block device over an image file (MicroPython's extended block protocol), unbuffered."""

    def __init__(self, path):
        self.f = open(path, "r+b")  # the unix port's files write straight through
        self.count = _file_size(path) // BLOCK_SIZE

    def readblocks(self, block, buf, offset=0):
        self.f.seek(block * BLOCK_SIZE + offset)
        self.f.readinto(buf)

    def writeblocks(self, block, buf, offset=0):
        self.f.seek(block * BLOCK_SIZE + offset)
        self.f.write(buf)

    def ioctl(self, op, arg):
        if op == _BD_BLOCK_COUNT:
            return self.count
        if op == _BD_BLOCK_SIZE:
            return BLOCK_SIZE
        if op == _BD_ERASE:  # a real erase: a torn program after it reads as erased flash
            self.f.seek(arg * BLOCK_SIZE)
            self.f.write(_ERASED)
            return 0
        if op == _BD_SYNC:
            return 0
        return None


def _mount_micropython(vfs, path):
    bdev = FileBlocks(path)
    formatted = False
    try:
        fs = vfs.VfsLfs2(bdev)
    except OSError:  # as the chip's _boot.py: a flash that does not mount is formatted
        vfs.VfsLfs2.mkfs(bdev)
        fs = vfs.VfsLfs2(bdev)
        formatted = True
    vfs.mount(fs, MOUNT)
    return formatted


def _posix_shim():
    try:
        from host_sim import lfs_posix  # tests, from the repository root
    except ImportError:
        import lfs_posix  # the runner: host_sim/ is the script's folder
    return lfs_posix


def open_cpython(path, format_it=False):
    """A mounted littlefs.LittleFS over the image file (CPython), formatted first if asked."""
    import littlefs

    context = _posix_shim().WriteThroughContext(path)
    fs = littlefs.LittleFS(
        context=context, mount=False, block_size=BLOCK_SIZE, block_count=context.size // BLOCK_SIZE,
        read_size=READ_SIZE, prog_size=PROG_SIZE, lookahead_size=LOOKAHEAD_SIZE, cache_size=CACHE_SIZE,
        block_cycles=BLOCK_CYCLES, name_max=NAME_MAX,
    )  # no disk_version: format and mount as the unix port's LittleFS does (v2.1), v2.0 images mount too
    if format_it:
        fs.format()
    fs.mount()
    return fs


def _mount_cpython(path):
    import littlefs

    formatted = False
    try:
        fs = open_cpython(path)
    except littlefs.LittleFSError:
        fs = open_cpython(path, format_it=True)
        formatted = True
    _posix_shim().install(fs, MOUNT)
    return formatted


def mount(path, size):
    """Mount the image at MOUNT; a missing image is made `size` bytes big and formatted.

    Returns a line for the console saying what happened (an image that does not mount is
    formatted, as the chip does at boot: the line says so).
    """
    made = _file_size(path) < 0
    if made:
        create_image(path, check_size(size))
    try:
        import vfs

        formatted = _mount_micropython(vfs, path) if hasattr(vfs, "VfsLfs2") else None
    except ImportError:
        formatted = None
    if formatted is None:
        formatted = _mount_cpython(path)
    blocks = _file_size(path) // BLOCK_SIZE
    if made:
        state = "new image, formatted"
    elif formatted:
        state = "image did not mount: formatted"
    else:
        state = "mounted"
    return "flash: LittleFS {} ({} blocks of {} bytes) at {}: {}".format(
        path, blocks, BLOCK_SIZE, MOUNT, state)


def image_files(path):
    """CPython, for tests: {path in the image: bytes} of every file in an image (e.g. "data/config/SOUL.md")."""
    fs = open_cpython(path)
    found = {}
    try:
        for folder, _dirs, names in fs.walk("/"):
            for name in names:
                full = (folder.rstrip("/") + "/" + name).lstrip("/")
                with fs.open(full, "rb") as f:
                    found[full] = f.read()
    finally:
        fs.unmount()
        fs.context.close()
    return found


def put_files(path, size, contents, fill=None):
    """CPython, for tests: a new formatted image holding contents {path: bytes, "folder/": None}.

    fill = (folder, data_of(i), name_of(i)) then adds files until the image is full: a flash
    with no room left. Returns the names fill added.
    """
    create_image(path, check_size(size))
    fs = open_cpython(path, format_it=True)
    shim = _posix_shim().Shim(fs, "/image")  # the runner's own file calls, not installed globally
    added = []

    def put(name, data):
        parts = name.split("/")  # "folder/" (data None) makes just the folder
        for i in range(1, len(parts)):
            try:
                shim.mkdir("/image/" + "/".join(parts[:i]))
            except OSError:
                pass  # there already
        if data is not None:
            with shim.open("/image/" + name, "wb") as f:
                f.write(data)

    try:
        for name, data in sorted(contents.items()):
            put(name, data)
        while fill:
            folder, data_of, name_of = fill
            name = folder + "/" + name_of(len(added))
            try:
                put(name, data_of(len(added)))
            except OSError:
                try:
                    shim.remove("/image/" + name)  # created, never filled
                except OSError:
                    pass
                break
            added.append(name)
    finally:
        fs.unmount()
        fs.context.close()
    return added
