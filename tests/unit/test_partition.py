# The esp32.Partition stand-in: two app slots in files, set_boot, and the bootloader's rollback at power-on.
import json
import os

import esp32
from support import raises, read, remove_tree, tempdir

BLOCK = 4096
IMAGE = b"\xe9" + b"new firmware" * 400  # an app image starts with 0xE9


def _flash():
    path = tempdir("ota")
    esp32.set_flash_dir(path)
    return path


def _label(which):
    return esp32.Partition(which).info()[4]


def _write(part, data):
    for n in range(0, len(data), BLOCK):
        block = bytearray(b"\xff" * BLOCK)
        piece = data[n : n + BLOCK]
        block[: len(piece)] = piece
        part.writeblocks(n // BLOCK, block)


def _done(path):
    esp32.set_flash_dir(None)
    remove_tree(path)


def test_a_fresh_flash_runs_ota_0_and_offers_ota_1():
    path = _flash()
    try:
        assert _label(esp32.Partition.RUNNING) == "ota_0" and _label(esp32.Partition.BOOT) == "ota_0"
        nxt = esp32.Partition(esp32.Partition.RUNNING).get_next_update()
        t = nxt.info()
        assert t[4] == "ota_1" and t[0] == esp32.Partition.TYPE_APP and t[3] == 0x300000
        assert nxt.ioctl(5, 0) == BLOCK and nxt.ioctl(4, 0) == 0x300000 // BLOCK
        assert os.listdir(path) == []  # nothing written until an update happens
    finally:
        _done(path)


def test_blocks_round_trip_in_the_slot_file_and_unwritten_flash_reads_erased():
    path = _flash()
    try:
        part = esp32.Partition("ota_1")
        part.writeblocks(2, bytearray(b"\x01" * BLOCK))
        buf = bytearray(BLOCK)
        part.readblocks(2, buf)
        assert buf == bytearray(b"\x01" * BLOCK)
        part.readblocks(0, buf)
        assert buf == bytearray(b"\xff" * BLOCK)
        assert read(path + "/ota_1.bin", "rb")[2 * BLOCK : 3 * BLOCK] == b"\x01" * BLOCK
    finally:
        _done(path)


def test_writes_past_the_slot_or_of_partial_blocks_are_refused():
    path = _flash()
    try:
        esp32.set_slot_size(2 * BLOCK)
        part = esp32.Partition("ota_1")
        raises(OSError, part.writeblocks, 2, bytearray(BLOCK))
        raises(OSError, part.writeblocks, 0, bytearray(100))
        part.writeblocks(1, bytearray(BLOCK))
    finally:
        esp32.set_slot_size(0x300000)
        _done(path)


def test_set_boot_refuses_something_that_is_not_an_app_image():
    path = _flash()
    try:
        part = esp32.Partition("ota_1")
        _write(part, b"MZ not an image")
        raises(OSError, part.set_boot)
        assert _label(esp32.Partition.BOOT) == "ota_0"
    finally:
        _done(path)


def test_new_slot_boots_and_stays_once_marked_valid():
    path = _flash()
    try:
        part = esp32.Partition(esp32.Partition.RUNNING).get_next_update()
        _write(part, IMAGE)
        part.set_boot()
        assert _label(esp32.Partition.BOOT) == "ota_1" and _label(esp32.Partition.RUNNING) == "ota_0"
        esp32._reload()  # reset: the bootloader starts the new slot
        assert _label(esp32.Partition.RUNNING) == "ota_1"
        esp32.Partition.mark_app_valid_cancel_rollback()
        esp32._reload()
        esp32.set_flash_dir(path)  # even a new process on the same flash
        assert _label(esp32.Partition.RUNNING) == "ota_1" and _label(esp32.Partition.BOOT) == "ota_1"
        assert json.loads(read(path + "/otadata.json"))["states"]["ota_1"] == "valid"
    finally:
        _done(path)


def test_a_new_slot_not_marked_valid_rolls_back_at_the_next_reset():
    path = _flash()
    try:
        part = esp32.Partition("ota_1")
        _write(part, IMAGE)
        part.set_boot()
        esp32._reload()
        assert _label(esp32.Partition.RUNNING) == "ota_1"
        esp32.set_flash_dir(path)  # reset before mark_app_valid_cancel_rollback()
        assert _label(esp32.Partition.RUNNING) == "ota_0" and _label(esp32.Partition.BOOT) == "ota_0"
        esp32._reload()  # and it stays on the old slot
        assert _label(esp32.Partition.RUNNING) == "ota_0"
        # the next update goes to the aborted slot again, and can succeed
        _write(esp32.Partition(esp32.Partition.RUNNING).get_next_update(), IMAGE)
        esp32.Partition("ota_1").set_boot()
        esp32._reload()
        esp32.Partition.mark_app_valid_cancel_rollback()
        esp32._reload()
        assert _label(esp32.Partition.RUNNING) == "ota_1"
    finally:
        _done(path)


def test_marking_valid_without_an_update_changes_nothing():
    path = _flash()
    try:
        esp32.Partition.mark_app_valid_cancel_rollback()
        assert os.listdir(path) == []
        esp32._reload()
        assert _label(esp32.Partition.RUNNING) == "ota_0"
    finally:
        _done(path)


def test_memory_flash_keeps_slots_until_a_new_flash():
    esp32.set_flash_dir(None)
    part = esp32.Partition("ota_1")
    _write(part, IMAGE)
    part.set_boot()
    esp32._reload()
    assert _label(esp32.Partition.RUNNING) == "ota_1"
    buf = bytearray(16)
    esp32.Partition(esp32.Partition.RUNNING).readblocks(0, buf)
    assert bytes(buf) == IMAGE[:16]
    esp32.set_flash_dir(None)
    assert _label(esp32.Partition.RUNNING) == "ota_0"
    esp32.Partition("ota_1").readblocks(0, buf)
    assert bytes(buf) == b"\xff" * 16


def test_unknown_partition_label_is_not_found():
    esp32.set_flash_dir(None)
    assert raises(OSError, esp32.Partition, "nope").args[0] == 2
