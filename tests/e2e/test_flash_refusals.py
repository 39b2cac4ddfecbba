# The failures a user meets when flashing, with the real esptool against an emulated board
# (tools/mock_board.py): a port that does not answer, another chip, a flash too small for the
# partition table, an app larger than our slot, a board whose files the new table would lose. Each:
# one line, a non-zero exit, nothing written, and the next run goes through.
import socket

from tests.e2e import esp_images
from tests.e2e.mock_board import (ERASED, MB, PARTS_8, PARTS_16, STOCK_PARTS, STOCK_PARTS_OLD, STOCK_VERSION,
                                  TABLE_8, VERSION, MockBoard, make, part, provision_csv, region, tool)
from tests.nvs_image import blobs


def one_line(result):
    """The message of a tool that stopped: exactly one line on stderr."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "socket://127.0.0.1:{}".format(s.getsockname()[1])


def test_a_port_that_does_not_answer(tmp_path):
    firmware = tmp_path / "firmware.bin"
    firmware.write_bytes(esp_images.full_image(PARTS_16, VERSION, 16 * MB))
    url = _closed_port()
    line = one_line(tool("flash.py", "flash", "--port", url, "--firmware", str(firmware)))
    assert line.startswith("flash: no board answered on {} (esptool: Could not open {}".format(url, url))
    assert "hold BOOT, press RESET" in line and line.endswith("; nothing was written")
    line = one_line(tool("flash.py", "erase", "--port", url))
    assert line.startswith("erase: no board answered on " + url) and line.endswith("nothing was erased")


def test_another_chip_is_refused_before_anything_is_written(tmp_path):
    firmware = tmp_path / "firmware.bin"
    firmware.write_bytes(esp_images.full_image(PARTS_16, VERSION, 16 * MB))
    (tmp_path / "erased.bin").write_bytes(bytes([ERASED]) * len(firmware.read_bytes()))
    with MockBoard(tmp_path, flash_size="4MB", chip="esp32c3") as mock:
        line = one_line(tool("flash.py", "flash", "--port", mock.url, "--firmware", str(firmware)))
        assert line == ("flash: the board on {} is an ESP32-C3, not an ESP32-S3: MimiClaw runs on "
                        "the ESP32-S3 only; nothing was written".format(mock.url))
        line = one_line(tool("flash.py", "erase", "--port", mock.url))
        assert line.endswith("is an ESP32-C3, not an ESP32-S3: MimiClaw runs on the ESP32-S3 only; "
                             "nothing was erased")
        untouched = mock.verify((0, tmp_path / "erased.bin"))
        assert untouched.returncode == 0, untouched.stdout[-2000:] + untouched.stderr[-2000:]


def test_an_8mb_board_refuses_the_16mb_table_and_a_too_large_app_then_takes_the_8mb_one(tmp_path):
    big = tmp_path / "firmware.bin"
    big.write_bytes(esp_images.full_image(PARTS_16, VERSION, 16 * MB))
    (tmp_path / "erased.bin").write_bytes(bytes([ERASED]) * len(big.read_bytes()))
    stock = tmp_path / "ESP32_GENERIC_S3-SPIRAM_OCT.bin"  # an older release: MicroPython's vfs at 0x200000
    stock.write_bytes(esp_images.full_image(STOCK_PARTS_OLD, STOCK_VERSION, 8 * MB))
    large = tmp_path / "ESP32_GENERIC_S3-large.bin"  # fits MicroPython's 3 MB factory slot, not our 2.5 MB ota_0
    large.write_bytes(esp_images.full_image(STOCK_PARTS, STOCK_VERSION, 8 * MB)[:0x10000]
                      + esp_images.app(STOCK_VERSION, 8 * MB, size=0x290000))
    large_app = len(large.read_bytes()) - 0x10000
    small = tmp_path / "firmware-8MiB.bin"
    small.write_bytes(esp_images.full_image(PARTS_8, VERSION, 8 * MB))
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "manifest.json").write_text("{}\n")
    with MockBoard(tmp_path, flash_size="8MB") as mock:
        line = one_line(tool("flash.py", "flash", "--port", mock.url, "--firmware", str(big)))
        assert line == ("flash: the board on {} has 8MB of flash; partitions.csv needs 16MB: on an 8 MB "
                        "board use PARTITIONS=partitions-8MiB.csv; nothing was written".format(mock.url))
        line = one_line(tool("flash.py", "flash", "--port", mock.url, "--firmware", str(large),
                             "--partitions", TABLE_8))
        assert 0x280000 < large_app <= 0x300000
        assert line == ("flash: the app in {} ({} bytes) is larger than partitions-8MiB.csv's first app slot, "
                        "ota_0 (2621440 bytes); nothing was written".format(large, large_app))
        assert mock.verify((0, tmp_path / "erased.bin")).returncode == 0

        done = make("flash", "PORT=" + mock.url, "FIRMWARE=" + str(stock), "PARTITIONS=" + TABLE_8)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert ("the image's own partition table (nvs 0x9000, phy_init 0xf000, factory 0x10000, vfs 0x200000) "
                "is not written: the board gets partitions-8MiB.csv's") in done.stdout
        assert "(partition table, partitions-8MiB.csv)" in done.stdout
        assert "erasing otadata" in done.stdout  # ours has one
        head = mock.read(0, 0x10000, tmp_path / "stock-head.bin")
        assert esp_images.read_table(head[esp_images.TABLE_OFFSET:]) == esp_images.entries(PARTS_8)
        app = stock.read_bytes()[0x10000:]
        assert mock.read(part("ota_0", PARTS_8).offset, len(app), tmp_path / "stock-app.bin") == app

        done = make("flash", "PORT=" + mock.url, "FIRMWARE=" + str(small), "PARTITIONS=" + TABLE_8)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "an ESP32-S3 with 8MB of flash answered" in done.stdout
        nvs = tool("provision.py", "--csv", str(provision_csv(tmp_path / "provision.csv")), "--out",
                   str(tmp_path / "nvs.bin"), "--partitions", TABLE_8, "--port", mock.url)
        vfs = tool("fsimage.py", "--bundle", str(tmp_path / "bundle"), "--out", str(tmp_path / "fs.bin"),
                   "--partitions", TABLE_8, "--port", mock.url)
        for made in (nvs, vfs):
            assert made.returncode == 0, made.stdout + made.stderr
            assert len(mock.run_printed(made.stdout)) == 1
        assert "write-flash {:#x} ".format(part("vfs", PARTS_8).offset) in vfs.stdout
        head = mock.read(0, 0x10000, tmp_path / "head.bin")
        assert head[:esp_images.TABLE_OFFSET] == small.read_bytes()[:esp_images.TABLE_OFFSET]
        assert esp_images.read_table(head[esp_images.TABLE_OFFSET:]) == esp_images.entries(PARTS_8)
        assert blobs(region(head, part("nvs", PARTS_8)))[("wifi_config", "ssid")] == b"MyHomeWiFi"
        vfs_end = part("vfs", PARTS_8).offset + part("vfs", PARTS_8).size
        assert vfs_end == 8 * MB and mock.verify((part("vfs", PARTS_8).offset,
                                                  tmp_path / "fs.bin")).returncode == 0


def test_a_board_whose_files_the_new_table_would_lose_is_refused_until_erased(tmp_path):
    """A board that ran the stock image (written whole at 0x0, as micropython.org says): its vfs, with the
    owner's files, is at 0x310000; partitions.csv's at 0x710000. Nothing is written until the owner erases."""
    stock = tmp_path / "ESP32_GENERIC_S3-SPIRAM_OCT-v1.26.1.bin"
    stock.write_bytes(esp_images.full_image(STOCK_PARTS, STOCK_VERSION, 8 * MB))
    files = tmp_path / "files.bin"
    files.write_bytes(b"littlefs: the owner's /data\n" * 2000)
    with MockBoard(tmp_path) as mock:
        for offset, path in ((0, stock), (part("vfs", STOCK_PARTS).offset, files)):
            assert mock.esptool("write-flash", hex(offset), str(path)).returncode == 0
        line = one_line(tool("flash.py", "flash", "--port", mock.url, "--firmware", str(stock)))
        assert line == ("flash: the board's partition table has its vfs (the board's files, /data included) at "
                        "0x310000 (0x4f0000 bytes), partitions.csv at 0x710000 (0x8f0000 bytes): flashing would "
                        "lose those files; copy /data off with mpremote first if you want it, then `make erase "
                        "PORT={}` (the whole flash, settings too) and `make flash` again; nothing was written"
                        .format(mock.url))
        kept = mock.verify((0, stock), (part("vfs", STOCK_PARTS).offset, files))
        assert kept.returncode == 0, kept.stdout[-2000:] + kept.stderr[-2000:]

        assert make("erase", "PORT=" + mock.url).returncode == 0
        done = make("flash", "PORT=" + mock.url, "FIRMWARE=" + str(stock))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        head = mock.read(0, 0x9000, tmp_path / "head.bin")
        assert esp_images.read_table(head[esp_images.TABLE_OFFSET:]) == esp_images.entries(PARTS_16)
