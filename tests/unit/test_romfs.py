# ROMFS updates: the rom_ioctl stand-in as the ESP32 port answers, staging (good image, bad hash, cut
# download) and the boot-time write (verified, power loss mid-write resumed, failure puts the old image back).
import os

import romfs_boot
import romfs_flash
from mimi.net.http import HTTPError
from mimi.ota import romfs
from mimi.ota.image import UpdateError
from ota_fakes import FakeResponse, sha256_hex
from support import raises, read, remove_tree, run, tempdir, write

URL = "https://updates.example/romfs.img"
PART = 32 * 1024  # a small romfs partition: 8 blocks


def _image(tag, size):
    """A ROMFS-shaped image: header, length, payload (the boot code only reads the header)."""
    payload = (tag * (size // len(tag) + 1))[:size]
    n = len(payload)
    length = bytes([0x80 | (n >> 14) & 0x7F, 0x80 | (n >> 7) & 0x7F, n & 0x7F])
    return b"\xd2\xcd\x31" + length + payload


def _board(old=None):
    root = tempdir("romfs")
    romfs_flash.configure(root + "/part.bin", PART)
    if old:
        seg = romfs_flash.rom_ioctl(2, 0)
        for block in range((len(old) + 4095) // 4096):
            chunk = old[block * 4096 : (block + 1) * 4096]
            seg.writeblocks(block, chunk + b"\xff" * (4096 - len(chunk)))
    return root


def _partition(n):
    buf = bytearray(n)
    romfs_flash.rom_ioctl(2, 0).readblocks(0, buf)
    return bytes(buf)


def _stage(root, body, expected=None, **kw):
    async def get(url):
        assert url == URL
        return FakeResponse(body, **kw)

    return run(romfs.stage(root, URL, expected or sha256_hex(body), None, get))


def test_rom_ioctl_answers_as_the_esp32_port():
    root = _board()
    try:
        assert romfs_flash.rom_ioctl(1) == 1
        seg = romfs_flash.rom_ioctl(2, 0)
        assert seg.ioctl(4, 0) == PART // 4096 and seg.ioctl(5, 0) == 4096
        for op in (3, 4, 5, 99):  # write ops go through the segment on the ESP32: -EINVAL here
            assert romfs_flash.rom_ioctl(op, 0, 0) == -22
        err = raises(OSError, seg.writeblocks, PART // 4096, bytearray(4096))
        assert err.args[0] == -0x104  # ESP_ERR_INVALID_SIZE, as check_esp_err raises it
        raises(OSError, seg.ioctl, 6, PART // 4096)
        assert _partition(4) == b"\xff\xff\xff\xff"  # never written: erased
        seg.writeblocks(0, b"\xf0" * 8, 0)  # a partial write does not erase: bits only clear
        seg.writeblocks(0, b"\x0f" * 8, 0)
        assert _partition(8) == b"\x00" * 8
        seg.ioctl(6, 0)
        assert _partition(8) == b"\xff" * 8
        romfs_flash.configure(None, 0)  # a board without the partition
        assert romfs_flash.rom_ioctl(1) == 0 and romfs_flash.rom_ioctl(2, 0) == -22
        assert romfs_boot.segment() is None
        raises(UpdateError, romfs.capacity)
    finally:
        remove_tree(root)


def test_a_good_image_is_staged_then_written_and_verified_at_boot():
    old, new = _image(b"old!", 5000), _image(b"NEW.", 12000)
    root = _board(old)
    try:
        assert _stage(root, new) == len(new)
        assert _partition(len(old)) == old  # the running image is untouched until the restart
        assert read(root + "/" + romfs_boot.NEW, "rb") == new
        assert romfs_boot.image_length(romfs_flash.rom_ioctl(2, 0)) == len(old)
        lines = []
        assert romfs_boot.install(root, log=lines.append) is True
        assert _partition(len(new)) == new
        assert romfs_boot.flash_sha256(romfs_flash.rom_ioctl(2, 0), len(new)) == sha256_hex(new)
        for name in (romfs_boot.NEW, romfs_boot.NEW + ".sha256", romfs_boot.OLD):
            assert name not in os.listdir(root)
        assert "verified" in lines[-1]
        assert romfs_boot.install(root) is None  # nothing staged: nothing to do
    finally:
        remove_tree(root)


def test_a_bad_hash_or_a_cut_download_leaves_the_running_image():
    old, new = _image(b"old!", 5000), _image(b"NEW.", 12000)
    root = _board(old)
    try:
        err = raises(UpdateError, _stage, root, new, "ab" * 32)
        assert "SHA-256 mismatch" in str(err)
        raises(HTTPError, _stage, root, new, None, cut_after=5000)
        err = raises(UpdateError, _stage, root, b"MZ not an image", None)
        assert "not a ROMFS image" in str(err)
        err = raises(UpdateError, _stage, root, _image(b"big", PART), None)
        assert "larger than the romfs partition" in str(err)
        assert [n for n in os.listdir(root) if n != "part.bin"] == []  # nothing staged, no leftovers
        assert romfs_boot.install(root) is None
        assert _partition(len(old)) == old
    finally:
        remove_tree(root)


def test_power_loss_mid_write_is_finished_at_the_next_boot():
    old, new = _image(b"old!", 5000), _image(b"NEW.", 12000)
    root = _board(old)
    try:
        _stage(root, new)
        romfs_flash.power_cut_after(2)  # the third block's write is cut half-way
        raises(romfs_flash.PowerCut, romfs_boot.install, root)
        assert _partition(len(new)) != new and _partition(len(old)) != old  # torn
        assert romfs_boot.OLD in os.listdir(root)  # the running image was saved first
        assert romfs_boot.install(root) is True  # the next boot: the staged image is written again
        assert _partition(len(new)) == new
        assert sorted(os.listdir(root)) == ["part.bin"]
    finally:
        remove_tree(root)


def test_a_failed_write_puts_the_previous_image_back():
    old = _image(b"old!", 5000)
    root = _board(old)
    try:
        big = _image(b"too big", PART + 100)  # slipped past staging (an older firmware staged it)
        write(root + "/" + romfs_boot.NEW, big, "wb")
        write(root + "/" + romfs_boot.NEW + ".sha256", sha256_hex(big) + "\n")
        lines = []
        assert romfs_boot.install(root, log=lines.append) is False
        assert _partition(len(old)) == old
        assert any("previous image is back" in line for line in lines)
        assert sorted(os.listdir(root)) == ["part.bin"]
        write(root + "/" + romfs_boot.NEW, old, "wb")  # a staged file whose hash does not match
        write(root + "/" + romfs_boot.NEW + ".sha256", "00" * 32 + "\n")
        assert romfs_boot.install(root) is False
        assert _partition(len(old)) == old and sorted(os.listdir(root)) == ["part.bin"]
    finally:
        remove_tree(root)


def test_rom_comes_before_lib_on_the_path():
    import sys

    saved = list(sys.path)
    try:
        sys.path[:] = ["", ".frozen", "/lib", "/", "//lib"]
        romfs_boot.ROM = "/"  # a folder that exists stands in for the mounted image
        romfs_boot.order_path()
        assert sys.path == ["", ".frozen", "/", "//lib", "/lib"]
    finally:
        romfs_boot.ROM = "/rom"
        sys.path[:] = saved
