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

from esp32_ota import (  # noqa: F401  (the OTA half of the module, re-exported)
    ESP_ERR_INVALID_SIZE,
    ESP_ERR_OTA_VALIDATE_FAILED,
    Partition,
    _boot,
    _memory_slots,
    _ota,
    set_slot_size,
)
from esp32_ota import flash_dir as _flash_dir  # the flash folder (None: in this process's memory only)

_MCU_TEMPERATURE_C = 41  # a resting ESP32-S3 die; MIMI_SIM_SENSORS scripts another (see machine.py)

ESP_ERR_NVS_NOT_FOUND = 0x1102
ESP_ERR_NVS_KEY_TOO_LONG = 0x1109
ESP_ERR_NVS_INVALID_LENGTH = 0x110C

_NAME_MAX = 15  # characters in a key or a namespace name (NVS_KEY_NAME_MAX_SIZE - 1)
_I32_MIN = -2147483648
_I32_MAX = 2147483647
_BLOB = "blob"
_I32 = "i32"
_FILE_NAME = "nvs.json"

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


def mcu_temperature():
    """The chip's internal temperature in degrees C (ESP32-S2/S3/C3); scripted through machine.use_sensors."""
    import machine

    value = machine.scripted("temperature")
    return _MCU_TEMPERATURE_C if value is None else value


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
