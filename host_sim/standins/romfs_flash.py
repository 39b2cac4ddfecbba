# Laptop stand-in for the ESP32 port's vfs.rom_ioctl over a file: the "romfs" partition of partitions.csv.
#
# Faithful to ports/esp32/esp32_partition.c (MicroPython >= 1.25): rom_ioctl(1) is the number of
# segments (1 with the partition, 0 without); rom_ioctl(2, id) is the segment, an esp32.Partition
# (here: Segment) whatever the id, -EINVAL without the partition; every other op answers -EINVAL,
# so writes go through the segment's block interface, as `mpremote romfs deploy` does on the ESP32:
# ioctl(4) block count, ioctl(5) block size (4096), ioctl(6, n) erases block n, writeblocks(n, buf,
# offset) programs flash, which only clears bits (erased flash reads 0xff); out of range is
# OSError(-ESP_ERR_INVALID_SIZE). On the chip the segment is memory-mapped flash (buffer protocol);
# here `image_length()` and `read_into()` copy the image out of the file instead (host_sim/run.py mounts that).
# power_cut_after(n) stops the n-th next write half-way with PowerCut, as a power loss would.
import os

BLOCK_SIZE = 4096
EINVAL = 22
ESP_ERR_INVALID_SIZE = 0x104
ROMFS_HEADER = b"\xd2\xcd\x31"
_ERASED = 0xFF

_state = {"path": None, "size": 0, "cut": None}


class PowerCut(BaseException):
    """The power went while a block was being written (BaseException: nothing in the firmware catches it)."""


def configure(path, size):
    """The partition is the file at path (None: the board has no romfs partition), size bytes big."""
    _state["path"], _state["size"], _state["cut"] = path, size, None
    if path:
        try:
            os.stat(path)
        except OSError:  # a new board: nothing written yet (every byte reads as erased)
            with open(path, "wb"):
                pass


def power_cut_after(writes):
    """The write after `writes` more complete ones is cut half-way (None: no cut)."""
    _state["cut"] = writes


def _error():
    return OSError(-ESP_ERR_INVALID_SIZE, "ESP_ERR_INVALID_SIZE")


def _read(offset, n):
    with open(_state["path"], "rb") as f:
        f.seek(offset)
        got = f.read(n)
    return got if len(got) == n else got + bytes([_ERASED]) * (n - len(got))  # never written: erased


def _write(offset, data):
    length = os.stat(_state["path"])[6]
    with open(_state["path"], "r+b") as f:
        if length < offset:
            f.seek(length)
            f.write(bytes([_ERASED]) * (offset - length))
        f.seek(offset)
        f.write(data)


class Segment:
    """The romfs partition as the ESP32 port hands it out: an esp32.Partition's block interface."""

    def ioctl(self, op, arg):
        if op == 4:
            return _state["size"] // BLOCK_SIZE
        if op == 5:
            return BLOCK_SIZE
        if op == 6:
            if not 0 <= arg < _state["size"] // BLOCK_SIZE:
                raise _error()
            _write(arg * BLOCK_SIZE, bytes([_ERASED]) * BLOCK_SIZE)
            return 0
        if op in (1, 2, 3):  # init, deinit, sync
            return 0
        return None

    def readblocks(self, block, buf, offset=0):
        start = block * BLOCK_SIZE + offset
        if start < 0 or start + len(buf) > _state["size"]:
            raise _error()
        buf[:] = _read(start, len(buf))

    def writeblocks(self, block, buf, offset=None):
        start = block * BLOCK_SIZE + (offset or 0)
        if start < 0 or start + len(buf) > _state["size"]:
            raise _error()
        if offset is None:  # a whole-block write erases first, as esp32.Partition does
            for n in range(len(buf) // BLOCK_SIZE):
                self.ioctl(6, block + n)
        old = _read(start, len(buf))
        new = bytes(a & b for a, b in zip(old, bytes(buf)))  # programming only clears bits
        if _state["cut"] is not None:
            if _state["cut"] == 0:
                _write(start, new[: len(new) // 2])
                _state["cut"] = None
                raise PowerCut("power lost while writing the romfs partition")
            _state["cut"] -= 1
        _write(start, new)

    def image_length(self):
        """Bytes of the ROMFS image at the partition's start (its header says); 0 when there is none."""
        head = _read(0, 8)
        if not head.startswith(ROMFS_HEADER):
            return 0
        size, used = 0, 3
        for value in head[3:]:
            used += 1
            size = (size << 7) | (value & 0x7F)
            if not value & 0x80:
                break
        return min(used + size, _state["size"])

    def read_into(self, buf):
        """The partition's first len(buf) bytes into buf, without a second copy (erased past the file's end)."""
        with open(_state["path"], "rb") as f:
            n = f.readinto(buf) or 0
        for i in range(n, len(buf)):
            buf[i] = _ERASED

    def mapped(self):
        """The image as the chip maps it (bytes up to the image's own end; b'' when none is there)."""
        return _read(0, self.image_length()) if self.image_length() else b""


_segment = Segment()


def rom_ioctl(op, *args):
    if op == 1:
        return 1 if _state["path"] else 0
    if op == 2:
        return _segment if _state["path"] else -EINVAL
    return -EINVAL
