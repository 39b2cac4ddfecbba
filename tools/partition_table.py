"""Read an ESP-IDF partition table CSV (explicit offsets) into Partition records."""
import collections

TABLE_OFFSET = 0x8000  # ESP-IDF's default place for the partition table itself
TABLE_SIZE = 0x1000
APP_ALIGN = 0x10000  # app partitions: 64 KB
DATA_ALIGN = 0x1000  # everything else: one 4 KB flash sector

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

