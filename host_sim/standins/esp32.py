# Laptop stand-in for the esp32 module: NVS kept in <flash>/nvs.json, OTA app slots in <flash>/ota_N.bin.
#
# NVS follows the chip (ports/esp32/esp32_nvs.c on ESP-IDF): errors are
# OSError(-ESP_ERR_..., "ESP_ERR_...") exactly as MicroPython raises them there, keys and
# namespaces hold at most 15 characters, a get of the wrong type is "not found", and changes
# not yet commit()ted are lost at a power cycle (_reload()).
# Deviation: a key holds one value; setting it with the other type replaces it (IDF keeps both).
import binascii
import json
import os

ESP_ERR_NVS_NOT_FOUND = 0x1102
ESP_ERR_NVS_KEY_TOO_LONG = 0x1109
ESP_ERR_NVS_INVALID_LENGTH = 0x110C

_NAME_MAX = 15  # characters in a key or a namespace name (NVS_KEY_NAME_MAX_SIZE - 1)
_I32_MIN = -2147483648
_I32_MAX = 2147483647
_BLOB = "blob"
_I32 = "i32"
_FILE_NAME = "nvs.json"

# The flash folder (None: flash lives in this process's memory only).
_flash_dir = [None]
# What survives a power cycle: {namespace: {key: (type, value)}}.
_committed = {}
# What reads see now (committed plus changes since the last commit), shared by every NVS object.
_live = {}


def _error(code, name):
    return OSError(-code, name)


def _check_name(name):
    if not isinstance(name, str):
        raise TypeError("NVS names must be str")
    if len(name) > _NAME_MAX:
        raise _error(ESP_ERR_NVS_KEY_TOO_LONG, "ESP_ERR_NVS_KEY_TOO_LONG")


def _copy(tree):
    return {ns: dict(entries) for ns, entries in tree.items()}


def _file():
    return _flash_dir[0] + "/" + _FILE_NAME


def _load_file():
    try:
        with open(_file()) as f:
            raw = json.load(f)
    except OSError:  # no file yet: a freshly erased flash
        return {}
    tree = {}
    for ns, entries in raw.items():
        tree[ns] = {}
        for key, (kind, value) in entries.items():
            if kind == _BLOB:
                value = binascii.a2b_base64(value)
            tree[ns][key] = (kind, value)
    return tree


def _save_file():
    raw = {}
    for ns, entries in _committed.items():
        raw[ns] = {}
        for key, (kind, value) in entries.items():
            if kind == _BLOB:
                value = binascii.b2a_base64(value).decode().strip()
            raw[ns][key] = [kind, value]
    final = _file()
    tmp = final + ".tmp"
    with open(tmp, "w") as f:
        json.dump(raw, f)
    try:
        os.rename(tmp, final)
    except OSError:  # a rename that cannot replace an existing file
        os.remove(final)
        os.rename(tmp, final)


def _reload():
    """Host only: a power cycle. Uncommitted changes are dropped; flash is read again."""
    if _flash_dir[0] is not None:
        _committed.clear()
        _committed.update(_load_file())
    _live.clear()
    _live.update(_copy(_committed))
    _boot()


def set_flash_dir(path):
    """Host only: NVS and the app slots live in <path> (None: in memory, empty). Implies a power cycle."""
    _flash_dir[0] = path
    _committed.clear()
    _ota.clear()
    _memory_slots.clear()
    _reload()


class NVS:
    """One NVS namespace, as esp32.NVS on the chip."""

    def __init__(self, namespace):
        _check_name(namespace)
        self._ns = namespace

    def __repr__(self):
        return "<NVS namespace>"

    def _entries(self):
        return _live.setdefault(self._ns, {})

    def _get(self, key, kind):
        _check_name(key)
        entry = self._entries().get(key)
        if entry is None or entry[0] != kind:
            raise _error(ESP_ERR_NVS_NOT_FOUND, "ESP_ERR_NVS_NOT_FOUND")
        return entry[1]

    def set_i32(self, key, value):
        _check_name(key)
        value = int(value)
        if not _I32_MIN <= value <= _I32_MAX:
            raise OverflowError("overflow converting long int to machine word")
        self._entries()[key] = (_I32, value)

    def get_i32(self, key):
        return self._get(key, _I32)

    def set_blob(self, key, value):
        _check_name(key)
        if isinstance(value, str):
            value = value.encode()
        self._entries()[key] = (_BLOB, bytes(value))

    def get_blob(self, key, buf):
        """Copy the blob into buf; return its length. A too small buf raises, like the chip."""
        data = self._get(key, _BLOB)
        n = len(data)
        if n > len(buf):
            raise _error(ESP_ERR_NVS_INVALID_LENGTH, "ESP_ERR_NVS_INVALID_LENGTH")
        buf[:n] = data
        return n

    def erase_key(self, key):
        _check_name(key)
        entries = self._entries()
        if key not in entries:
            raise _error(ESP_ERR_NVS_NOT_FOUND, "ESP_ERR_NVS_NOT_FOUND")
        del entries[key]

    def commit(self):
        """Make this namespace's changes survive a power cycle (flash file replaced atomically)."""
        _committed[self._ns] = dict(self._entries())
        if _flash_dir[0] is not None:
            _save_file()


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
    return _flash_dir[0] + "/" + _OTA_FILE


def _load_ota():
    if _flash_dir[0] is None:  # memory flash: what this process wrote so far
        if not _ota:
            return _ota_default()
        return {"boot": _ota["boot"], "running": _ota["running"], "states": dict(_ota["states"])}
    try:
        with open(_ota_file()) as f:
            return json.load(f)
    except (OSError, ValueError):  # never written: the factory state
        return _ota_default()


def _save_ota():
    if _flash_dir[0] is None:
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
        return _flash_dir[0] + "/" + self.label + ".bin"

    def _read(self, offset, length):
        if _flash_dir[0] is None:
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
        if _flash_dir[0] is None:
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
