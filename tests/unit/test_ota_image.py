# The OTA image writer: 4 KB blocks into the next slot, SHA-256 checked, boot switched only on success.
import esp32
from mimi.net.http import HTTPError
from mimi.ota import image
from ota_fakes import FakeResponse, PatternResponse, sha256_hex
from support import raises, remove_tree, run, tempdir

BLOCK = 4096
IMAGE = b"\xe9" + bytes(range(256)) * 40  # 10241 bytes: two whole blocks and a partial one


def _label(which):
    return esp32.Partition(which).info()[4]


def _slot_bytes(label, n):
    buf = bytearray(n)
    esp32.Partition(label).readblocks(0, buf)
    return bytes(buf)


def _flash(running_image=None):
    path = tempdir("otaimg")
    esp32.set_flash_dir(path)
    if running_image:  # what the board runs now, in ota_0
        buf = bytearray(b"\xff" * BLOCK)
        buf[: len(running_image)] = running_image
        esp32.Partition("ota_0").writeblocks(0, buf)
    return path


def _done(path):
    esp32.set_slot_size(0x300000)
    esp32.set_flash_dir(None)
    remove_tree(path)


def _write(resp, expected, progress=None):
    return run(image.write_image(resp, expected, image.next_slot(), progress))


def test_a_good_image_is_written_verified_and_becomes_the_boot_slot():
    path = _flash(b"\xe9running app")
    try:
        lines = []
        assert _write(FakeResponse(IMAGE), sha256_hex(IMAGE), lines.append) == len(IMAGE)
        assert _slot_bytes("ota_1", len(IMAGE)) == IMAGE
        tail = bytearray(BLOCK)
        esp32.Partition("ota_1").readblocks(2, tail)
        assert bytes(tail[len(IMAGE) - 2 * BLOCK :]) == b"\xff" * (3 * BLOCK - len(IMAGE))  # padded as erased
        assert _label(esp32.Partition.BOOT) == "ota_1" and _label(esp32.Partition.RUNNING) == "ota_0"
        esp32._reload()
        assert _label(esp32.Partition.RUNNING) == "ota_1"
    finally:
        _done(path)


def test_an_image_of_exact_blocks_without_a_length_header_works():
    path = _flash()
    try:
        data = b"\xe9" + b"x" * (2 * BLOCK - 1)
        assert _write(FakeResponse(data, announce=False, piece=333), sha256_hex(data)) == 2 * BLOCK
        assert _label(esp32.Partition.BOOT) == "ota_1"
    finally:
        _done(path)


def test_a_wrong_hash_is_refused_and_the_boot_slot_stays():
    path = _flash(b"\xe9running app")
    try:
        exc = raises(image.UpdateError, _write, FakeResponse(IMAGE), "ab" * 32)
        assert "SHA-256 mismatch" in str(exc) and sha256_hex(IMAGE) in str(exc)
        assert _label(esp32.Partition.BOOT) == "ota_0"
        esp32._reload()
        assert _label(esp32.Partition.RUNNING) == "ota_0"
        assert _slot_bytes("ota_0", 12) == b"\xe9running app"
    finally:
        _done(path)


def test_an_image_larger_than_the_slot_is_refused_before_writing():
    path = _flash()
    try:
        esp32.set_slot_size(2 * BLOCK)
        exc = raises(image.UpdateError, _write, FakeResponse(IMAGE), sha256_hex(IMAGE))
        assert "larger than the ota_1 slot (8192 bytes)" in str(exc)
        assert _slot_bytes("ota_1", 4) == b"\xff" * 4  # nothing was written
        # without a Content-Length the stream is cut off at the slot's end
        exc = raises(image.UpdateError, _write, FakeResponse(IMAGE, announce=False), sha256_hex(IMAGE))
        assert "larger than the ota_1 slot" in str(exc)
        assert _label(esp32.Partition.BOOT) == "ota_0"
    finally:
        _done(path)


def test_a_connection_cut_mid_download_leaves_the_running_slot_untouched():
    path = _flash(b"\xe9running app")
    try:
        raises(HTTPError, _write, FakeResponse(IMAGE, cut_after=5000), sha256_hex(IMAGE))
        assert _label(esp32.Partition.BOOT) == "ota_0"
        assert _slot_bytes("ota_0", 12) == b"\xe9running app"
        esp32._reload()
        assert _label(esp32.Partition.RUNNING) == "ota_0"
    finally:
        _done(path)


def test_a_body_shorter_than_announced_is_refused():
    path = _flash()
    try:
        resp = FakeResponse(IMAGE)
        resp.headers["content-length"] = str(len(IMAGE) + 10)
        exc = raises(image.UpdateError, _write, resp, sha256_hex(IMAGE))
        assert "ended after 10241 of 10251 bytes" in str(exc)
        assert _label(esp32.Partition.BOOT) == "ota_0"
    finally:
        _done(path)


def test_something_that_is_not_an_app_image_is_refused_at_the_first_block():
    path = _flash()
    try:
        html = b"<html>" + b"x" * 5000
        exc = raises(image.UpdateError, _write, FakeResponse(html), sha256_hex(html))
        assert "not an ESP32 app image" in str(exc)
        assert _slot_bytes("ota_1", 4) == b"\xff" * 4
    finally:
        _done(path)


def test_progress_is_reported_for_big_images():
    path = _flash()
    try:
        resp = PatternResponse(b"\xe9", b"z", 600 * 1024)
        lines = []
        _write(resp, resp.sha256_hex(), lines.append)
        assert lines == ["ota: 256 KB of 600 KB (42%)", "ota: 512 KB of 600 KB (85%)"]
    finally:
        _done(path)


def test_hashes_and_urls_are_checked():
    assert image.check_hash(" " + "AB" * 32 + "\n") == "ab" * 32
    raises(image.UpdateError, image.check_hash, "abc")
    raises(image.UpdateError, image.check_hash, "zz" * 32)
    exc = raises(image.UpdateError, run, image.install("http://example.com/fw.bin", "ab" * 32))
    assert "https://" in str(exc)


def test_describe_and_mark_valid():
    path = _flash()
    try:
        assert image.describe() == "running ota_0, next boot ota_0"
        _write(FakeResponse(IMAGE), sha256_hex(IMAGE))
        assert image.describe() == "running ota_0, next boot ota_1"
        esp32._reload()
        assert image.mark_valid() is True
        esp32._reload()
        assert image.describe() == "running ota_1, next boot ota_1"
    finally:
        _done(path)
