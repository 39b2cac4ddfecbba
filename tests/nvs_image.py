# The NVS partition read as the chip's nvs_flash reads it: the project's own reader (the settings
# a board finds) and a check against esp-idf-nvs-partition-gen's definition of the format (CRCs).
import struct
import zlib

from esp_idf_nvs_partition_gen.nvs_partition_gen import Page

# 4 KB pages of a 32-byte header, a 32-byte entry state bitmap and 126 entries of 32 bytes.
PAGE = 4096
ENTRIES = 126
ENTRY_WRITTEN = 0b10
TYPE_U8 = 0x01
TYPE_STR = 0x21
TYPE_BLOB_DATA = 0x42
TYPE_BLOB_IDX = 0x48
ERASED_PAGE = 0xFFFFFFFF


def _written(page):
    """(index, entry bytes) of every written entry of a page, spans skipped."""
    bitmap = page[32:64]
    i = 0
    while i < ENTRIES:
        state = (bitmap[i // 4] >> ((i % 4) * 2)) & 3
        entry = page[64 + 32 * i:64 + 32 * (i + 1)]
        if state != ENTRY_WRITTEN:
            i += 1
            continue
        yield i, entry
        i += max(entry[2], 1)


def nvs_entries(image):
    """[(namespace index, type, key, payload)] of every written entry; namespaces have index 0."""
    found = []
    for base in range(0, len(image), PAGE):
        page = image[base:base + PAGE]
        if page[:4] == b"\xff\xff\xff\xff":  # never used
            continue
        for i, entry in _written(page):
            ns, kind, span = entry[0], entry[1], entry[2]
            key = entry[8:24].split(b"\0", 1)[0].decode()
            data = entry[24:32]
            if kind == TYPE_BLOB_DATA or kind == TYPE_STR:
                size = struct.unpack_from("<H", data)[0]
                payload = page[64 + 32 * (i + 1):64 + 32 * (i + span)][:size]
            else:
                payload = data
            found.append((ns, kind, key, payload))
    return found


def blobs(image):
    """{(namespace, key): bytes} of the blob data chunks in an NVS image."""
    entries = nvs_entries(image)
    names = {e[3][0]: e[2] for e in entries if e[0] == 0 and e[1] == TYPE_U8}
    return {(names[ns], key): payload for ns, kind, key, payload in entries
            if kind == TYPE_BLOB_DATA}


def _crc(data):
    return zlib.crc32(bytes(data), 0xFFFFFFFF) & 0xFFFFFFFF


def format_problems(image):
    """What nvs_flash would reject, by the generator's rules: page states, versions and header
    CRCs, every written entry's CRC and each variable-length item's data CRC."""
    problems = []
    for base in range(0, len(image), Page.PAGE_PARAMS["max_size"]):
        page = image[base:base + Page.PAGE_PARAMS["max_size"]]
        state, _seq = struct.unpack_from("<II", page, 0)
        if state == ERASED_PAGE:
            continue
        where = "page at {:#x}".format(base)
        if state not in (Page.ACTIVE, Page.FULL):
            problems.append("{}: state {:#x}".format(where, state))
        if page[8] not in (Page.VERSION1, Page.VERSION2):
            problems.append("{}: version {:#x}".format(where, page[8]))
        if struct.unpack_from("<I", page, 28)[0] != _crc(page[4:28]):
            problems.append("{}: header CRC".format(where))
        for i, entry in _written(page):
            if struct.unpack_from("<I", entry, 4)[0] != _crc(entry[0:4] + entry[8:32]):
                problems.append("{} entry {}: CRC".format(where, i))
            if entry[1] in (Page.SZ, Page.BLOB_DATA):
                size, = struct.unpack_from("<H", entry, 24)
                start = Page.FIRST_ENTRY_OFFSET + Page.SINGLE_ENTRY_SIZE * (i + 1)
                if struct.unpack_from("<I", entry, 28)[0] != _crc(page[start:start + size]):
                    problems.append("{} entry {}: data CRC".format(where, i))
    return problems
