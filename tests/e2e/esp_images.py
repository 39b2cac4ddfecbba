# Small synthetic but valid ESP32-S3 images for the flashing tests, made with esptool's own image
# writer (esptool image-info accepts them), and ESP-IDF's binary partition table, written and read.
import hashlib
import struct

from esptool.bin_image import ELFSection, ESP32S3FirmwareImage

TABLE_OFFSET = 0x8000
TABLE_MAX = 0xC00  # ESP-IDF's limit: entries, the MD5 entry, 0xff after them
ENTRY = struct.Struct("<2sBBII16sI")  # magic, type, subtype, offset, size, label, flags
ENTRY_MAGIC = b"\xaa\x50"
MD5_MAGIC = b"\xeb\xeb"  # gen_esp32part.py's MD5 entry: the magic, 14 bytes of 0xff, the digest
TYPES = {"app": 0x00, "data": 0x01}
SUBTYPES = {("app", "factory"): 0x00, ("app", "ota_0"): 0x10, ("app", "ota_1"): 0x11,
            ("data", "ota"): 0x00, ("data", "phy"): 0x01, ("data", "nvs"): 0x02,
            ("data", "fat"): 0x81}
FLASH_SIZES = {0x800000: 0x30, 0x1000000: 0x40}  # the header's flash size nibble (high), 40 MHz
DIO = 2
APP_DESC_MAGIC = 0xABCD5432
# esp_app_desc_t as esptool's image-info reads it: magic, secure version, reserved, version,
# project name, time, date, IDF version, ELF SHA-256, eFuse revisions, MMU page size, reserved
APP_DESC = struct.Struct("<II8s32s32s16s16s32s32sHHB3s72s")
DROM = 0x3C000020  # the first flash-mapped data segment starts with the app description
IROM = 0x42000020
IRAM = 0x40374000
BOOT_IRAM = 0x403C8700
BOOT_DRAM = 0x3FCE2700


def _image(segments, entry, flash_size):
    image = ESP32S3FirmwareImage()
    image.flash_mode = DIO
    image.flash_size_freq = FLASH_SIZES[flash_size]
    for addr, data in segments:
        image.segments.append(ELFSection(b".s%x" % addr, addr, data, 0))
    image.entrypoint = entry
    return image.save(None)  # checksum and SHA-256 digest appended, as ESP-IDF's build does


def bootloader(flash_size):
    code = bytes(range(256)) * 8
    return _image([(BOOT_IRAM, code), (BOOT_DRAM, b"\0" * 256)], BOOT_IRAM + 0x100, flash_size)


def app(version, flash_size, size=64 * 1024):
    """An application image whose description says `version` (esptool image-info prints it)."""
    desc = APP_DESC.pack(APP_DESC_MAGIC, 0, b"", version.encode(), b"micropython", b"12:00:00",
                         b"Jan  1 2026", b"v5.4.1", b"\0" * 32, 0, 0, 0, b"", b"")
    filler = hashlib.sha256(version.encode()).digest() * (size // 32)
    return _image([(DROM, desc + filler[:size // 2]), (IROM, filler[size // 2:]),
                   (IRAM, b"\x36\x41\x00\x00" * 64)], IRAM, flash_size)


def entries(parts):
    """[(name, type, subtype, offset, size)] of partition_table.Partition records (a CSV's rows)."""
    return [(p.name, TYPES[p.type], _subtype(p), p.offset, p.size) for p in parts]


def _subtype(part):
    known = SUBTYPES.get((part.type, part.subtype))
    return int(part.subtype, 0) if known is None else known  # a number, as romfs's 0x8f


def table(parts):
    """The binary partition table of partition_table.Partition records, MD5 entry included."""
    out = b""
    for name, ptype, subtype, offset, size in entries(parts):
        out += ENTRY.pack(ENTRY_MAGIC, ptype, subtype, offset, size, name.encode(), 0)
    out += MD5_MAGIC + b"\xff" * 14 + hashlib.md5(out).digest()
    return out + b"\xff" * (TABLE_MAX - len(out))


def read_table(data):
    """[(name, type, subtype, offset, size)] of a binary table, as the bootloader reads it: its MD5
    entry must match the entries before it (ValueError otherwise)."""
    found = []
    for pos in range(0, TABLE_MAX, ENTRY.size):
        magic = data[pos:pos + 2]
        if magic == MD5_MAGIC:
            if data[pos + 16:pos + 32] != hashlib.md5(data[:pos]).digest():
                raise ValueError("the partition table's MD5 does not match its entries")
            return found
        if magic != ENTRY_MAGIC:
            break
        _m, ptype, subtype, offset, size, label, _flags = ENTRY.unpack_from(data, pos)
        found.append((label.rstrip(b"\0").decode(), ptype, subtype, offset, size))
    raise ValueError("no MD5 entry after the partition table's {} entries".format(len(found)))


def full_image(parts, version, flash_size):
    """MicroPython's firmware.bin layout: bootloader at 0, table at 0x8000, app at its slot, 0xff
    between them (what makeimg.py writes)."""
    slot = next(p for p in parts if p.type == "app")
    image = bytearray(b"\xff" * slot.offset)
    boot = bootloader(flash_size)
    image[:len(boot)] = boot
    image[TABLE_OFFSET:TABLE_OFFSET + TABLE_MAX] = table(parts)
    return bytes(image) + app(version, flash_size)
