"""ESP-IDF partition tables: a CSV (explicit offsets) read into Partition records, and the binary
table the bootloader reads at 0x8000, written and read as ESP-IDF's gen_esp32part.py does."""
import collections
import hashlib
import struct

TABLE_OFFSET = 0x8000  # ESP-IDF's default place for the partition table itself
TABLE_SIZE = 0x1000
TABLE_MAX = 0xC00  # the binary table: entries, the MD5 entry, 0xff up to here
APP_ALIGN = 0x10000  # app partitions: 64 KB
DATA_ALIGN = 0x1000  # everything else: one 4 KB flash sector
ENTRY = struct.Struct("<2sBBII16sI")  # magic, type, subtype, offset, size, label, flags
MAGIC = b"\xaa\x50"
MD5_MAGIC = b"\xeb\xeb"  # then 14 bytes of 0xff and the MD5 of the entries before it
LABEL_MAX = 16
TYPES = {"app": 0x00, "data": 0x01}
SUBTYPES = {  # esp_partition_subtype_t
    "app": dict([("factory", 0x00), ("test", 0x20)]
                + [("ota_{}".format(n), 0x10 + n) for n in range(16)]),
    "data": {"ota": 0x00, "phy": 0x01, "nvs": 0x02, "coredump": 0x03, "nvs_keys": 0x04,
             "efuse": 0x05, "undefined": 0x06, "esphttpd": 0x80, "fat": 0x81, "spiffs": 0x82,
             "littlefs": 0x83},
}
FLAGS = {"encrypted": 0x01, "readonly": 0x02}

Partition = collections.namedtuple("Partition", "name type subtype offset size flags")


def parse_number(text):
    """0x.. hex, decimal, or a K/M suffix ("16K", "3M")."""
    text = text.strip()
    scale = 1
    if text[-1:].upper() in ("K", "M"):
        scale = 1024 if text[-1].upper() == "K" else 1024 * 1024
        text = text[:-1]
    return int(text, 0) * scale


def read(path):
    """Partitions in file order; every row must give its offset and size."""
    parts = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            cells = [cell.strip() for cell in line.split(",")]
            cells += [""] * (6 - len(cells))
            name, ptype, subtype, offset, size, flags = cells[:6]
            if not offset or not size:
                raise ValueError("{}:{}: give every partition an explicit offset and size"
                                 .format(path, number))
            parts.append(Partition(name, ptype, subtype, parse_number(offset),
                                   parse_number(size), flags))
    return parts


def find(parts, name):
    for part in parts:
        if part.name == name:
            return part
    raise KeyError("no partition named {!r} in the table".format(name))



def _number(text, names, what):
    if text in names:
        return names[text]
    try:
        value = int(text, 0)
    except ValueError:
        raise ValueError("unknown {} {!r} (known: {})".format(what, text, ", ".join(names))) \
            from None
    if not 0 <= value <= 0xFF:
        raise ValueError("{} {!r} is not 0..0xff".format(what, text))
    return value


def binary(parts):
    """The binary table of these partitions (TABLE_MAX bytes, MD5 entry included); ValueError
    naming the partition when one cannot be written or the bootloader would refuse the table."""
    out = b""
    end = TABLE_OFFSET + TABLE_SIZE
    for p in sorted(parts, key=lambda p: p.offset):
        where = "partition {}".format(p.name)
        label = p.name.encode("ascii", "replace")
        if not label or len(label) > LABEL_MAX:
            raise ValueError("{}: a name of 1 to {} ASCII characters".format(where, LABEL_MAX))
        align = APP_ALIGN if p.type == "app" else DATA_ALIGN
        if p.offset % align:
            raise ValueError("{}: offset {:#x} is not a multiple of {:#x}".format(
                where, p.offset, align))
        if p.offset < end:
            raise ValueError("{}: offset {:#x} overlaps what comes before it (up to {:#x})".format(
                where, p.offset, end))
        end = p.offset + p.size
    for p in parts:
        where = "partition {}: ".format(p.name)
        try:
            ptype = _number(p.type, TYPES, "type")
            subtype = _number(p.subtype, SUBTYPES.get(p.type, {}), "subtype")
            flags = 0
            for flag in filter(None, (f.strip() for f in p.flags.split(":"))):
                flags |= _number(flag, FLAGS, "flag")
        except ValueError as e:
            raise ValueError(where + str(e)) from None
        out += ENTRY.pack(MAGIC, ptype, subtype, p.offset, p.size, p.name.encode(), flags)
    out += MD5_MAGIC + b"\xff" * 14 + hashlib.md5(out).digest()
    if len(out) > TABLE_MAX:
        raise ValueError("{} partitions: more than a table holds".format(len(parts)))
    return out + b"\xff" * (TABLE_MAX - len(out))


def from_binary(data):
    """The Partition records of a binary table (types and subtypes by name where ESP-IDF names
    them), or None when data holds none the bootloader would take: erased, something else, or an
    MD5 that does not match."""
    names = {kind: {number: name for name, number in table.items()}
             for kind, table in SUBTYPES.items()}
    parts = []
    for pos in range(0, min(len(data), TABLE_MAX) - ENTRY.size + 1, ENTRY.size):
        magic, ptype, subtype, offset, size, label, flags = ENTRY.unpack_from(data, pos)
        if magic == MD5_MAGIC:
            digest = hashlib.md5(data[:pos]).digest()
            return parts if parts and data[pos + 16:pos + 32] == digest else None
        if magic != MAGIC:
            return parts or None  # a table written without its MD5 entry ends at the first 0xff
        kind = next((name for name, number in TYPES.items() if number == ptype),
                    "{:#x}".format(ptype))
        parts.append(Partition(label.rstrip(b"\0").decode("ascii", "replace"), kind,
                               names.get(kind, {}).get(subtype, "{:#x}".format(subtype)), offset,
                               size, ":".join(name for name, bit in FLAGS.items() if flags & bit)))
    return None
