# The partition tables: aligned, no overlaps, OTA slots big enough, vfs is the rest of the flash.
import os

import pytest

from tools import partition_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MB = 1024 * 1024
TABLES = {"partitions.csv": 16 * MB, "partitions-8MiB.csv": 8 * MB}
# A MicroPython ESP32_GENERIC_S3 image is ~1.6-2 MB; with our modules frozen it needs headroom.
APP_SLOT_MIN = 0x280000
NAMES = ["nvs", "otadata", "phy_init", "ota_0", "ota_1", "romfs", "vfs"]


def table(name):
    return partition_table.read(os.path.join(ROOT, name))


@pytest.mark.parametrize("name", sorted(TABLES))
def test_names_and_types(name):
    parts = table(name)
    assert [p.name for p in parts] == NAMES
    kinds = {p.name: (p.type, p.subtype) for p in parts}
    assert kinds["nvs"] == ("data", "nvs")
    assert kinds["otadata"] == ("data", "ota")
    assert kinds["phy_init"] == ("data", "phy")
    assert kinds["ota_0"] == ("app", "ota_0")
    assert kinds["ota_1"] == ("app", "ota_1")
    assert kinds["vfs"][0] == "data"  # MicroPython looks it up as TYPE_DATA, label "vfs"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_alignment(name):
    for p in table(name):
        align = partition_table.APP_ALIGN if p.type == "app" else partition_table.DATA_ALIGN
        assert p.offset % align == 0, "{} offset {:#x}".format(p.name, p.offset)
        assert p.size % align == 0, "{} size {:#x}".format(p.name, p.size)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_no_overlaps_and_fits_the_flash(name):
    parts = sorted(table(name), key=lambda p: p.offset)
    # Nothing may sit on the bootloader or the partition table itself.
    assert parts[0].offset >= partition_table.TABLE_OFFSET + partition_table.TABLE_SIZE
    for before, after in zip(parts, parts[1:]):
        assert before.offset + before.size <= after.offset, before.name + " overlaps " + after.name
    assert parts[-1].offset + parts[-1].size <= TABLES[name]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_sizes(name):
    parts = table(name)
    assert partition_table.find(parts, "nvs").size >= 0x3000  # NVS needs 3 pages or more
    assert partition_table.find(parts, "otadata").size == 0x2000  # two sectors, fixed by ESP-IDF
    assert partition_table.find(parts, "phy_init").size == 0x1000
    ota_0, ota_1 = partition_table.find(parts, "ota_0"), partition_table.find(parts, "ota_1")
    assert ota_0.size == ota_1.size >= APP_SLOT_MIN  # either slot must hold any image


@pytest.mark.parametrize("name", sorted(TABLES))
def test_vfs_is_the_rest_of_the_flash(name):
    parts = table(name)
    vfs = partition_table.find(parts, "vfs")
    last_other = max(p.offset + p.size for p in parts if p.name != "vfs")
    assert vfs.offset == last_other
    assert vfs.offset + vfs.size == TABLES[name]
    assert vfs.size >= 2 * MB


def test_reader_rejects_a_row_without_offset(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("nvs, data, nvs, , 0x4000,\n")
    with pytest.raises(ValueError, match="explicit offset"):
        partition_table.read(str(path))


def test_number_forms():
    assert partition_table.parse_number("0x10000") == 65536
    assert partition_table.parse_number("24K") == 24 * 1024
    assert partition_table.parse_number("3M") == 3 * MB
    assert partition_table.parse_number("4096") == 4096


@pytest.mark.parametrize("name", sorted(TABLES))
def test_romfs_partition_for_the_image(name):
    # MicroPython finds it by its label; 0x8f is the subtype its own romfs tables use.
    romfs = partition_table.find(table(name), "romfs")
    assert (romfs.type, romfs.subtype) == ("data", "0x8f")
    assert romfs.size >= 512 * 1024  # tests/host/test_romfs.py checks the room today's image leaves


# ---- the binary table `make flash` writes at 0x8000 ------------------------------------------------

@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_binary_table_reads_back_as_the_bootloader_reads_it(name):
    from tests.e2e import esp_images  # the tests' own writer and reader of ESP-IDF's format

    parts = table(name)
    data = partition_table.binary(parts)
    assert len(data) == partition_table.TABLE_MAX
    assert data == esp_images.table(parts)
    assert esp_images.read_table(data) == esp_images.entries(parts)  # MD5 entry checked
    assert partition_table.from_binary(data) == parts


def test_a_table_the_bootloader_would_not_take_reads_as_none():
    data = bytearray(partition_table.binary(table("partitions.csv")))
    assert partition_table.from_binary(b"\xff" * partition_table.TABLE_MAX) is None  # erased
    data[40] ^= 1  # an entry changed after its MD5
    assert partition_table.from_binary(bytes(data)) is None


@pytest.mark.parametrize("row, words", [
    ("ota_0, app, ota_0, 0x18000, 0x100000,", "partition ota_0: offset 0x18000 is not a multiple of 0x10000"),
    ("nvs, data, nvs, 0x8000, 0x4000,", "partition nvs: offset 0x8000 overlaps what comes before it (up to 0x9000)"),
    ("vfs, data, exfat, 0x9000, 0x4000,", "partition vfs: unknown subtype 'exfat'"),
    ("a_name_of_17_char, data, nvs, 0x9000, 0x4000,", "partition a_name_of_17_char: a name of 1 to 16 ASCII"),
    ("vfs, data, fat, 0x9000, 0x4000, shiny", "partition vfs: unknown flag 'shiny'"),
])
def test_a_table_that_cannot_be_written_names_the_partition(tmp_path, row, words):
    path = tmp_path / "bad.csv"
    path.write_text(row + "\n")
    with pytest.raises(ValueError) as e:
        partition_table.binary(partition_table.read(str(path)))
    assert str(e.value).startswith(words)
