# Runs from boot.py before anything is imported from /rom: puts /rom first and writes a staged ROMFS image.
# It stays a source file on the LittleFS root, so its code is in RAM while the romfs partition (where
# the firmware's bytecode runs in place) is erased and rewritten.
import binascii
import hashlib
import os
import sys

try:
    from micropython import const
except ImportError:  # CPython

    def const(value):
        return value


ROM = "/rom"
NEW = "romfs_new.img"  # staged and verified by ota_bundle (mimi/ota/romfs.py), with NEW + ".sha256"
OLD = "romfs_old.img"  # the image the partition held, kept until the new one is verified in flash
ROMFS_HEADER = b"\xd2\xcd\x31"
_BLOCK_DEFAULT = const(4096)
_ERASED = b"\xff"


def rom_ioctl():
    """vfs.rom_ioctl on a MicroPython with ROMFS (the laptop: host_sim/standins/romfs_flash.py); else None."""
    try:
        from vfs import rom_ioctl as ioctl
    except ImportError:
        try:
            from romfs_flash import rom_ioctl as ioctl
        except ImportError:
            return None
    return ioctl


def segment(ioctl=None):
    """The romfs partition's block device (an esp32.Partition on the chip), or None without one."""
    ioctl = ioctl or rom_ioctl()
    if ioctl is None or ioctl(1) <= 0:
        return None
    seg = ioctl(2, 0)
    return None if isinstance(seg, int) else seg


def order_path():
    """/rom and /rom/lib just before /lib, when an image is mounted: the image's modules win."""
    try:
        os.stat(ROM)
    except OSError:
        return
    for entry in (ROM, ROM + "/lib"):
        while entry in sys.path:
            sys.path.remove(entry)
    at = sys.path.index("/lib") if "/lib" in sys.path else len(sys.path)
    sys.path[at:at] = [ROM, ROM + "/lib"]


def image_length(seg):
    """Bytes of the image in the partition (its header says), 0 when there is none."""
    head = bytearray(8)
    seg.readblocks(0, head)
    if not bytes(head).startswith(ROMFS_HEADER):
        return 0
    size, used = 0, 3
    for value in head[3:]:
        used += 1
        size = (size << 7) | (value & 0x7F)
        if not value & 0x80:
            break
    return used + size


def _hex(digest):
    return binascii.hexlify(digest.digest()).decode()


def file_sha256(path):
    digest = hashlib.sha256()
    buf = bytearray(1024)
    with open(path, "rb") as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            digest.update(memoryview(buf)[:n])
    return _hex(digest)


def _blocks(seg, length):
    """The partition's first length bytes, a flash block at a time (one buffer, reused)."""
    bs = seg.ioctl(5, 0) or _BLOCK_DEFAULT
    buf = bytearray(bs)
    done = 0
    while done < length:
        seg.readblocks(done // bs, buf)
        n = min(bs, length - done)
        yield memoryview(buf)[:n]
        done += n


def flash_sha256(seg, length):
    """SHA-256 of the partition's first length bytes, read back block by block."""
    digest = hashlib.sha256()
    for block in _blocks(seg, length):
        digest.update(block)
    return _hex(digest)


def save(seg, length, path):
    """The partition's image into a file (the copy kept while a new one is written)."""
    with open(path + ".part", "wb") as f:
        for block in _blocks(seg, length):
            f.write(block)
    os.rename(path + ".part", path)


def write(seg, path, length):
    """The file into the partition: every block erased and programmed (writeblocks erases first)."""
    bs = seg.ioctl(5, 0) or _BLOCK_DEFAULT
    if length > seg.ioctl(4, 0) * bs:
        raise OSError(27, "the image is larger than the romfs partition")  # EFBIG
    buf = bytearray(bs)
    with open(path, "rb") as f:
        block = 0
        while block * bs < length:
            n = f.readinto(buf)
            if n < bs:
                buf[n:] = _ERASED * (bs - n)
            seg.writeblocks(block, buf)
            block += 1


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _read_hash(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def install(root="/", ioctl=None, log=print):
    """Write a staged image into the partition; True when written and verified, None when none waits.

    Power loss part-way leaves the staged file and the saved old image: the next boot starts again.
    Any failure puts the old image back and drops the staged one."""
    root = root.rstrip("/") + "/"
    new, old = root + NEW, root + OLD
    expected = _read_hash(new + ".sha256")
    try:
        size = os.stat(new)[6]
    except OSError:
        return None
    seg = segment(ioctl)
    if seg is None or not expected or file_sha256(new) != expected:
        log("romfs: the staged image is unusable (no partition, no hash, or a hash mismatch): dropped")
        _remove(new)
        _remove(new + ".sha256")
        return False
    try:
        import vfs

        vfs.umount(ROM)  # nothing may run from the image while it is rewritten
    except (ImportError, OSError, AttributeError):
        pass
    try:
        os.stat(old)
    except OSError:  # a first try, not one resumed after a power loss: keep the running image
        length = image_length(seg)
        if length:
            save(seg, length, old)
    ok = False
    try:
        log("romfs: writing the new image ({} bytes) into the romfs partition".format(size))
        write(seg, new, size)
        ok = flash_sha256(seg, size) == expected
    except OSError as exc:
        log("romfs: writing failed: {}".format(exc))
    if not ok:
        _restore(seg, old, log)
    _remove(new)
    _remove(new + ".sha256")
    if ok:
        _remove(old)
        log("romfs: new image written and verified (SHA-256 {})".format(expected))
    return ok


def _restore(seg, old, log):
    try:
        size = os.stat(old)[6]
    except OSError:
        log("romfs: no earlier image to put back; the modules in /lib run instead")
        return
    try:
        write(seg, old, size)
        _remove(old)
        log("romfs: the new image did not verify; the previous image is back")
    except OSError as exc:
        log("romfs: putting the previous image back failed: {}".format(exc))


def boot(root="/"):
    """boot.py's step: finish a staged install, then /rom first on sys.path."""
    if install(root) is not None:
        try:
            import vfs

            vfs.mount(vfs.VfsRom(segment()), ROM)
        except (ImportError, OSError, AttributeError, TypeError):
            pass
    order_path()
