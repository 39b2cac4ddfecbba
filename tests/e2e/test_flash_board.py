# Flashing tested the way a board is flashed: `make flash`, `make erase` and the esptool commands the
# provisioning tools print, run with the venv's real esptool against an emulated ESP32-S3 ROM
# bootloader (tools/mock_board.py), then the flash read back with esptool and checked: the table the
# bootloader reads (ours, though the image flashed is a stock one carrying MicroPython's own table), the
# app in our first slot, the NVS settings, the LittleFS files and the ROMFS image at the offsets the tools
# printed,
# on which the firmware then boots (every runtime; the ROMFS form mounts the romfs partition read
# back), and what a re-flash and an erase leave on the board. The failures: test_flash_refusals.py.
import base64
import json
import os
import struct
import sys
import types
import zlib

import pytest

from host_sim import lfs_flash
from host_sim.fake_anthropic import text
from tests.e2e import esp_images
from tests.e2e.conftest import API_KEY
from tests.e2e.mock_board import (ERASED, MB, PARTS_16, STOCK_PARTS, VERSION, WIFI_PASSWORD, MockBoard,
                                  erased, make, part, provision_csv, region, tool)
from tests.nvs_image import blobs, format_problems
from tests.runtimes import ROOT, RUNTIMES_WITH_ROMFS

for _path in ("firmware", "host_sim/standins"):  # as tests/host/test_fsimage.py
    if os.path.join(ROOT, _path) not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, _path))
from mimi.storage import layout  # noqa: E402  (the files the image holds)

NEWER = "v1.26.0-mimi.2"


def ota_record(sequence):
    """The otadata entry an OTA update leaves (esp_ota_select_entry_t: sequence 2 boots ota_1)."""
    return struct.pack("<I20sII", sequence, b"\xff" * 20, 2, zlib.crc32(struct.pack("<I", sequence)))


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    return RUNTIMES_WITH_ROMFS[request.param]


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A 16 MB ESP32-S3 after an OTA update, provisioned with the printed esptool commands (NVS from
    provision.example.csv, the LittleFS image, the ROMFS image), then `make flash`ed with the full image
    micropython.org publishes for ESP32_GENERIC_S3 (MicroPython's own 8 MB table inside); the whole flash
    read back."""
    tmp = tmp_path_factory.mktemp("board16")
    mock = MockBoard(tmp)
    try:
        (tmp / "otadata.bin").write_bytes(ota_record(2))
        assert mock.esptool("write-flash", hex(part("otadata").offset),
                            str(tmp / "otadata.bin")).returncode == 0
        made = {}
        made["nvs"] = tool("provision.py", "--csv", str(provision_csv(tmp / "provision.csv")),
                           "--out", str(tmp / "nvs.bin"), "--port", mock.url)
        made["romfs"] = tool("romfs.py", "build", "--out", str(tmp / "romfs.img"), "--port", mock.url)
        bundle = tmp / "romfs-src.bundle"  # the full bundle the ROMFS build made beside its image
        made["vfs"] = tool("fsimage.py", "--bundle", str(bundle), "--out", str(tmp / "fs.bin"),
                           "--port", mock.url)
        for name, result in made.items():
            assert result.returncode == 0, name + ": " + result.stdout[-2000:] + result.stderr[-2000:]
            assert len(mock.run_printed(result.stdout)) == 1, name
        firmware = tmp / "ESP32_GENERIC_S3-SPIRAM_OCT-v1.26.1.bin"
        firmware.write_bytes(esp_images.full_image(STOCK_PARTS, VERSION, 8 * MB))
        flashed = make("flash", "PORT=" + mock.url, "FIRMWARE=" + str(firmware))
        assert flashed.returncode == 0, flashed.stdout[-3000:] + flashed.stderr[-3000:]
        data = mock.read(0, "ALL", tmp / "read-back.bin")
        yield types.SimpleNamespace(mock=mock, tmp=tmp, bundle=bundle, firmware=firmware.read_bytes(),
                                    flashed=flashed, data=data, made=made)
    finally:
        mock.stop()


def test_make_flash_writes_the_images_bootloader_our_table_and_the_app_in_our_first_slot(board):
    data, firmware, out = board.data, board.firmware, board.flashed.stdout
    assert "an ESP32-S3 with 16MB of flash answered on " + board.mock.url in out
    assert ("the image's own partition table (nvs 0x9000, phy_init 0xf000, factory 0x10000, vfs 0x310000) "
            "is not written: the board gets partitions.csv's") in out
    assert "the image's bootloader says 8MB of flash; written as the board's 16MB" in out
    for line in ("flash: 0x0 build/flash/ESP32_GENERIC_S3-SPIRAM_OCT-v1.26.1.bootloader.bin (bootloader, the "
                 "image's)", "flash: 0x8000 build/flash/ESP32_GENERIC_S3-SPIRAM_OCT-v1.26.1.partitions.bin "
                 "(partition table, partitions.csv)", "flash: 0x10000 build/flash/ESP32_GENERIC_S3-SPIRAM_OCT-"
                 "v1.26.1.app.bin (app -> ota_0)"):
        assert line in out.splitlines()
    assert len(data) == 16 * MB  # read-flash ALL: the size esptool detected
    (board.tmp / "boot.bin").write_bytes(data[:esp_images.TABLE_OFFSET])
    boot = board.mock.esptool("image-info", str(board.tmp / "boot.bin"))  # the image's, told the board's size
    assert boot.returncode == 0 and "Flash size: 16MB" in boot.stdout, boot.stdout + boot.stderr
    assert boot.stdout.count("(valid)") == 2
    stock = esp_images.bootloader(8 * MB)
    assert data[:3] + data[4:len(stock) - 32] == stock[:3] + stock[4:len(stock) - 32]  # but the size, the hash
    table = data[esp_images.TABLE_OFFSET:esp_images.TABLE_OFFSET + esp_images.TABLE_MAX]
    assert esp_images.read_table(table) == esp_images.entries(PARTS_16)  # partitions.csv's, MD5 checked too
    app = firmware[part("factory", STOCK_PARTS).offset:]
    slot = region(data, part("ota_0"))
    assert slot[:len(app)] == app and erased(slot[len(app):])
    (board.tmp / "slot.bin").write_bytes(slot[:len(app)])
    info = board.mock.esptool("image-info", str(board.tmp / "slot.bin"))  # no board needed
    assert info.returncode == 0, info.stdout + info.stderr
    assert "App version: " + VERSION in info.stdout
    assert "Checksum: " in info.stdout and "Validation hash: " in info.stdout
    assert info.stdout.count("(valid)") == 2
    for name in ("otadata", "phy_init", "ota_1"):  # the OTA record erased: ota_0 boots
        assert erased(region(data, part(name))), name


def test_every_offset_the_tools_printed_is_where_the_boards_table_has_that_partition(board):
    table = esp_images.read_table(board.data[esp_images.TABLE_OFFSET:esp_images.TABLE_OFFSET + esp_images.TABLE_MAX])
    on_board = {name: offset for name, _type, _subtype, offset, _size in table}
    for name, result in board.made.items():  # make provision, make romfs, make fsimage
        printed = [line.split() for line in result.stdout.splitlines() if line.strip().startswith("esptool ")]
        (words,) = printed
        assert int(words[words.index("write-flash") + 1], 16) == on_board[name], (name, words)


def test_settings_read_back_as_the_firmware_stores_them(board):
    nvs = region(board.data, part("nvs"))
    assert nvs == (board.tmp / "nvs.bin").read_bytes()  # at 0x9000, kept by make flash
    assert format_problems(nvs) == []
    assert blobs(nvs) == {("wifi_config", "ssid"): b"MyHomeWiFi",
                          ("wifi_config", "password"): WIFI_PASSWORD.encode(),
                          ("llm_config", "api_key"): API_KEY.encode(),
                          ("llm_config", "model"): b"claude-sonnet-4-5"}


def test_files_read_back_mount_with_littlefs_and_match(board):
    vfs = region(board.data, part("vfs"))
    assert vfs == (board.tmp / "fs.bin").read_bytes()
    (board.tmp / "vfs.bin").write_bytes(vfs)
    found = lfs_flash.image_files(str(board.tmp / "vfs.bin"))  # littlefs-python, as MicroPython formats
    expected = {}
    for folder, _dirs, names in os.walk(str(board.bundle)):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                expected[os.path.relpath(path, str(board.bundle)).replace(os.sep, "/")] = f.read()
    expected.update({"data/config/SOUL.md": layout.DEFAULT_SOUL.encode(),
                     "data/config/USER.md": layout.DEFAULT_USER.encode(),
                     "data/memory/MEMORY.md": layout.DEFAULT_MEMORY.encode()})
    assert found == expected


def test_romfs_image_read_back_from_its_partition(board):
    image = (board.tmp / "romfs.img").read_bytes()
    romfs = region(board.data, part("romfs"))
    assert romfs[:len(image)] == image and erased(romfs[len(image):])


def test_the_firmware_boots_on_the_flash_read_back(board, boot, fake, flash, runtime, tmp_path):
    """Under MicroPython the ROMFS form mounts the romfs partition read back and runs from it;
    every runtime finds the NVS settings (joins the WiFi, uses the API key) and the files."""
    os.makedirs(str(flash))
    stored = {}
    for (namespace, key), value in blobs(region(board.data, part("nvs"))).items():
        stored.setdefault(namespace, {})[key] = ["blob", base64.b64encode(value).decode()]
    (flash / "nvs.json").write_text(json.dumps(stored))  # the host's NVS: what the chip's would hold
    with open(str(flash) + "-romfs.bin", "wb") as f:  # the romfs partition (tests/runtimes.py)
        f.write(region(board.data, part("romfs")))
    image = tmp_path / "vfs.bin"
    image.write_bytes(region(board.data, part("vfs")))
    radio = tmp_path / "radio"
    radio.write_text("MyHomeWiFi {}\n".format(WIFI_PASSWORD))
    dev = boot("--flash-image", str(image), env={"MIMI_SIM_WIFI": str(radio)})
    assert "WiFi: connected to 'MyHomeWiFi'" in dev.output  # booted: ready, network up
    assert "LittleFS" in dev.output and ": mounted" in dev.output
    assert "first boot" not in dev.output  # /data as flashed: nothing missing to write
    if runtime is RUNTIMES_WITH_ROMFS["romfs"]:
        assert "Code: ROMFS image in /rom" in dev.command("status")
    fake.script(text("Hello from the flashed board."))
    assert "Hello from the flashed board." in dev.command("chat hi", timeout=40)
    assert fake.requests[-1]["body"]["model"] == "claude-sonnet-4-5"


def test_a_second_flash_with_a_newer_app_keeps_settings_files_and_romfs(board):
    mock, tmp = board.mock, board.tmp
    assert mock.esptool("write-flash", hex(part("otadata").offset),
                        str(tmp / "otadata.bin")).returncode == 0  # another OTA update since
    newer = tmp / "micropython.bin"  # an app image alone: it goes to the first app slot
    newer.write_bytes(esp_images.app(NEWER, 16 * MB))
    flashed = make("flash", "PORT=" + mock.url, "FIRMWARE=" + str(newer))
    assert flashed.returncode == 0, flashed.stdout[-3000:] + flashed.stderr[-3000:]
    kept = mock.verify((part("nvs").offset, tmp / "nvs.bin"), (part("vfs").offset, tmp / "fs.bin"),
                       (part("romfs").offset, tmp / "romfs.img"))
    assert kept.returncode == 0, kept.stdout[-3000:] + kept.stderr[-3000:]
    assert kept.stdout.count("Verification successful (digest matched)") == 3
    app = newer.read_bytes()
    assert mock.read(part("ota_0").offset, len(app), tmp / "newer.bin") == app
    assert erased(mock.read(part("otadata").offset, part("otadata").size, tmp / "otadata-after.bin"))


def test_make_erase_leaves_every_byte_erased(tmp_path):
    (tmp_path / "all-erased.bin").write_bytes(bytes([ERASED]) * 16 * MB)
    firmware = tmp_path / "firmware.bin"
    firmware.write_bytes(esp_images.full_image(PARTS_16, VERSION, 16 * MB))
    with MockBoard(tmp_path) as mock:
        assert make("flash", "PORT=" + mock.url, "FIRMWARE=" + str(firmware)).returncode == 0
        (tmp_path / "memory.bin").write_bytes(b"- likes green tea\n" * 1000)
        assert mock.esptool("write-flash", hex(part("vfs").offset + 5 * MB),
                            str(tmp_path / "memory.bin")).returncode == 0
        assert mock.verify((0, tmp_path / "all-erased.bin")).returncode != 0
        erase = make("erase", "PORT=" + mock.url)
        assert erase.returncode == 0, erase.stdout[-3000:] + erase.stderr[-3000:]
        assert "wipes the WHOLE flash" in erase.stdout and "/data" in erase.stdout
        clean = mock.verify((0, tmp_path / "all-erased.bin"))
        assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
