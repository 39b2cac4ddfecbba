# Laptop stand-in for the esp32 module's OTA side: app slots in <flash>/ota_N.bin (esp32.py re-exports it).
import json
import os

flash_dir = [None]  # the flash folder, shared with esp32.py's NVS (None: flash kept in memory)


def _error(code, name):
    return OSError(-code, name)


# --- OTA app slots ---------------------------------------------------------------------------
# Two app slots as in partitions.csv, each in <flash>/ota_N.bin (bytes never written read as
# erased flash, 0xFF); which slot boots, and each slot's ESP-IDF OTA state, in <flash>/otadata.json.
# The bootloader's rollback runs at every power cycle (_boot, from _reload): a slot chosen by
# set_boot() starts "new", becomes "pending" when it boots, and a pending slot that boots again
# without mark_app_valid_cancel_rollback() is "aborted" and the other slot boots instead.
# Deviation: set_boot() checks only the image's first byte (0xE9), not its segments and checksum.

ESP_ERR_INVALID_SIZE = 0x104
ESP_ERR_OTA_VALIDATE_FAILED = 0x1503

_BLOCK = 4096
_SLOTS = ("ota_0", "ota_1")
_SLOT_ADDRESS = {"ota_0": 0x10000, "ota_1": 0x310000}
_APP_SUBTYPE_OTA_0 = 0x10
_IMAGE_MAGIC = 0xE9
_OTA_FILE = "otadata.json"
_NEW, _PENDING, _VALID, _ABORTED = "new", "pending", "valid", "aborted"

_slot_size = [0x300000]  # bytes per app slot (partitions.csv: 3 MB)
_ota = {}  # {"boot": label, "running": label, "states": {label: state}}
_memory_slots = {}  # label -> {block number: bytes}, when flash lives in memory


def set_slot_size(size):
    """Host only: the size of each app slot in bytes (a multiple of 4096)."""
    _slot_size[0] = size


def _ota_default():
    return {"boot": _SLOTS[0], "running": _SLOTS[0], "states": {}}


def _ota_file():
    return flash_dir[0] + "/" + _OTA_FILE


def _load_ota():
    if flash_dir[0] is None:  # memory flash: what this process wrote so far
        if not _ota:
            return _ota_default()
        return {"boot": _ota["boot"], "running": _ota["running"], "states": dict(_ota["states"])}
    try:
        with open(_ota_file()) as f:
            return json.load(f)
    except (OSError, ValueError):  # never written: the factory state
        return _ota_default()


def _save_ota():
    if flash_dir[0] is None:
        return
    final = _ota_file()
    tmp = final + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_ota, f)
    try:
        os.rename(tmp, final)
    except OSError:
        os.remove(final)
        os.rename(tmp, final)


def _boot():
    """Host only: what the bootloader does at power-on: pick the slot to run, roll back if due."""
    state = _load_ota()
    _ota.clear()
    _ota.update(state)
    states = _ota["states"]
    chosen = _ota["boot"]
    changed = False
    if states.get(chosen) == _NEW:
        states[chosen] = _PENDING
        changed = True
    elif states.get(chosen) in (_PENDING, _ABORTED):  # never confirmed: roll back
        states[chosen] = _ABORTED
        chosen = _other(chosen)
        _ota["boot"] = chosen
        changed = True
    if _ota["running"] != chosen:
        _ota["running"] = chosen
        changed = True
    if changed:
        _save_ota()


def _other(label):
    return _SLOTS[1] if label == _SLOTS[0] else _SLOTS[0]


def _erased(n):
    return b"\xff" * n


class Partition:
    """An app slot, as esp32.Partition on the chip (OTA subset)."""

    BOOT = 0
    RUNNING = 1
    TYPE_APP = 0
    TYPE_DATA = 1

    def __init__(self, id, block_size=_BLOCK):
        if not _ota:
            _boot()
        if id == Partition.BOOT:
            label = _ota["boot"]
        elif id == Partition.RUNNING:
            label = _ota["running"]
        elif id in _SLOTS:
            label = id
        else:
            raise OSError(2, "ENOENT")
        self.label = label
        self._block = block_size

    def __repr__(self):
        t = self.info()
        return "<Partition type={}, subtype={}, address={}, size={}, label={}, encrypted={}>".format(
            t[0], t[1], t[2], t[3], t[4], int(t[5]))

    def __eq__(self, other):
        return isinstance(other, Partition) and other.label == self.label

    @staticmethod
    def find(type=TYPE_APP, subtype=0xFF, label=None):
        if type != Partition.TYPE_APP:
            return []
        found = []
        for i, name in enumerate(_SLOTS):
            if (label is None or label == name) and subtype in (0xFF, _APP_SUBTYPE_OTA_0 + i):
                found.append(Partition(name))
        return found

    def info(self):
        """(type, subtype, address, size, label, encrypted)."""
        sub = _APP_SUBTYPE_OTA_0 + _SLOTS.index(self.label)
        return (Partition.TYPE_APP, sub, _SLOT_ADDRESS[self.label], _slot_size[0], self.label, False)

    def _check_range(self, offset, length):
        if offset < 0 or offset + length > _slot_size[0]:
            raise _error(ESP_ERR_INVALID_SIZE, "ESP_ERR_INVALID_SIZE")

    def _path(self):
        return flash_dir[0] + "/" + self.label + ".bin"

    def _read(self, offset, length):
        if flash_dir[0] is None:
            blocks = _memory_slots.get(self.label, {})
            out = bytearray()
            while len(out) < length:
                pos = offset + len(out)
                block = blocks.get(pos // _BLOCK, _erased(_BLOCK))
                start = pos % _BLOCK
                out.extend(block[start : start + length - len(out)])
            return bytes(out)
        try:
            with open(self._path(), "rb") as f:
                f.seek(offset)
                data = f.read(length)
        except OSError:
            data = b""
        return data + _erased(length - len(data))

    def _write(self, offset, data):
        if flash_dir[0] is None:
            blocks = _memory_slots.setdefault(self.label, {})
            for i in range(0, len(data), _BLOCK):
                blocks[(offset + i) // _BLOCK] = bytes(data[i : i + _BLOCK])
            return
        path = self._path()
        try:
            f = open(path, "r+b")
        except OSError:
            f = open(path, "wb")
        with f:
            size = f.seek(0, 2)
            if size < offset:  # the gap is erased flash, not zeros
                f.write(_erased(offset - size))
            f.seek(offset)
            f.write(data)

    def readblocks(self, block_num, buf, offset=0):
        start = block_num * self._block + offset
        self._check_range(start, len(buf))
        buf[:] = self._read(start, len(buf))

    def writeblocks(self, block_num, buf, offset=None):
        """Without offset, the blocks are erased first (whole blocks only), as on the chip."""
        start = block_num * self._block + (offset or 0)
        if offset is None and len(buf) % self._block:
            raise _error(ESP_ERR_INVALID_SIZE, "ESP_ERR_INVALID_SIZE")
        self._check_range(start, len(buf))
        self._write(start, bytes(buf))

    def ioctl(self, op, arg):
        if op == 4:  # block count
            return _slot_size[0] // self._block
        if op == 5:  # block size
            return self._block
        if op == 6:  # erase one block
            self._write(arg * self._block, _erased(self._block))
            return 0
        if op in (1, 2, 3):  # init, deinit, sync
            return 0
        return None

    def get_next_update(self):
        return Partition(_other(self.label))

    def set_boot(self):
        if self._read(0, 1)[0] != _IMAGE_MAGIC:
            raise _error(ESP_ERR_OTA_VALIDATE_FAILED, "ESP_ERR_OTA_VALIDATE_FAILED")
        _ota["boot"] = self.label
        _ota["states"][self.label] = _NEW
        _save_ota()

    @staticmethod
    def mark_app_valid_cancel_rollback():
        if not _ota:
            _boot()
        running = _ota["running"]
        if _ota["states"].get(running) == _PENDING:
            _ota["states"][running] = _VALID
            _save_ota()
