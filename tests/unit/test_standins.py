# The laptop stand-ins for esp32, machine and network behave like the chip's modules.
import json

import esp32
import machine
import network
from support import raises, read, remove_tree, tempdir, write

NOT_FOUND = -0x1102
INVALID_LENGTH = -0x110C
KEY_TOO_LONG = -0x1109


def _flash():
    path = tempdir("nvs")
    esp32.set_flash_dir(path)
    return path


# --- esp32.NVS ---------------------------------------------------------------------------------


def test_nvs_blob_round_trip_reports_length():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_blob("k", b"hello")
    buf = bytearray(16)
    assert nvs.get_blob("k", buf) == 5
    assert bytes(buf[:5]) == b"hello"


def test_nvs_blob_accepts_str_and_bytearray():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_blob("s", "h\u00e9")
    nvs.set_blob("b", bytearray(b"\x00\xff"))
    buf = bytearray(8)
    n = nvs.get_blob("s", buf)
    assert str(buf[:n], "utf-8") == "h\u00e9"
    n = nvs.get_blob("b", buf)
    assert bytes(buf[:n]) == b"\x00\xff"


def test_nvs_i32_round_trip_and_range():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_i32("a", -503)
    nvs.set_i32("b", 2147483647)
    assert nvs.get_i32("a") == -503
    assert nvs.get_i32("b") == 2147483647
    raises(OverflowError, nvs.set_i32, "c", 2147483648)


def test_nvs_missing_key_raises_the_chips_oserror():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    assert raises(OSError, nvs.get_blob, "nope", bytearray(4)).args[0] == NOT_FOUND
    assert raises(OSError, nvs.get_i32, "nope").args[0] == NOT_FOUND
    assert raises(OSError, nvs.erase_key, "nope").args[0] == NOT_FOUND


def test_nvs_wrong_type_is_not_found():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_blob("blob1", b"x")
    assert raises(OSError, nvs.get_i32, "blob1").args[0] == NOT_FOUND


def test_nvs_buffer_too_small_raises_invalid_length():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_blob("k", b"0123456789abc")
    exc = raises(OSError, nvs.get_blob, "k", bytearray(10))
    assert exc.args[0] == INVALID_LENGTH


def test_nvs_names_longer_than_15_characters_are_refused():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("n" * 15)
    nvs.set_i32("k" * 15, 1)
    assert raises(OSError, nvs.set_i32, "k" * 16, 1).args[0] == KEY_TOO_LONG
    assert raises(OSError, esp32.NVS, "n" * 16).args[0] == KEY_TOO_LONG


def test_nvs_erase_key_removes_it():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_i32("k", 1)
    nvs.erase_key("k")
    raises(OSError, nvs.get_i32, "k")


def test_nvs_objects_of_one_namespace_share_state_and_namespaces_are_separate():
    esp32.set_flash_dir(None)
    a = esp32.NVS("one")
    b = esp32.NVS("one")
    other = esp32.NVS("two")
    a.set_i32("k", 7)
    assert b.get_i32("k") == 7
    raises(OSError, other.get_i32, "k")


def test_nvs_commit_survives_a_power_cycle_and_pending_changes_do_not():
    path = _flash()
    try:
        nvs = esp32.NVS("ns")
        nvs.set_blob("kept", b"yes")
        nvs.commit()
        nvs.set_blob("lost", b"no")
        nvs.set_i32("kept", 5)  # an uncommitted overwrite is lost too
        esp32._reload()
        nvs = esp32.NVS("ns")
        buf = bytearray(8)
        assert bytes(buf[: nvs.get_blob("kept", buf)]) == b"yes"
        raises(OSError, nvs.get_blob, "lost", buf)
    finally:
        remove_tree(path)


def test_nvs_erase_is_lost_without_commit():
    path = _flash()
    try:
        nvs = esp32.NVS("ns")
        nvs.set_i32("k", 1)
        nvs.commit()
        nvs.erase_key("k")
        esp32._reload()
        assert esp32.NVS("ns").get_i32("k") == 1
    finally:
        remove_tree(path)


def test_nvs_commit_writes_the_documented_file_and_reads_it_back():
    path = _flash()
    try:
        nvs = esp32.NVS("ns")
        nvs.set_blob("b", b"\x00bin\xff")
        nvs.set_i32("i", 42)
        nvs.commit()
        raw = json.loads(read(path + "/nvs.json"))
        assert raw["ns"]["i"] == ["i32", 42]
        assert raw["ns"]["b"][0] == "blob"
        esp32.set_flash_dir(path)  # another process starting on the same flash folder
        buf = bytearray(8)
        n = esp32.NVS("ns").get_blob("b", buf)
        assert bytes(buf[:n]) == b"\x00bin\xff"
        assert esp32.NVS("ns").get_i32("i") == 42
    finally:
        remove_tree(path)


def test_nvs_commit_of_one_namespace_leaves_the_others_pending():
    path = _flash()
    try:
        esp32.NVS("a").set_i32("k", 1)
        b = esp32.NVS("b")
        b.set_i32("k", 2)
        b.commit()
        esp32._reload()
        raises(OSError, esp32.NVS("a").get_i32, "k")
        assert esp32.NVS("b").get_i32("k") == 2
    finally:
        remove_tree(path)


def test_nvs_commit_replaces_the_file_without_leaving_a_temporary():
    path = _flash()
    try:
        write(path + "/nvs.json", '{"ns": {"old": ["i32", 1]}}')
        esp32.set_flash_dir(path)
        nvs = esp32.NVS("ns")
        assert nvs.get_i32("old") == 1
        nvs.set_i32("new", 2)
        nvs.commit()
        import os

        assert sorted(os.listdir(path)) == ["nvs.json"]
        assert json.loads(read(path + "/nvs.json"))["ns"] == {"old": ["i32", 1], "new": ["i32", 2]}
    finally:
        remove_tree(path)


def test_nvs_in_memory_flash_keeps_commits_across_reload_only():
    esp32.set_flash_dir(None)
    nvs = esp32.NVS("ns")
    nvs.set_i32("k", 3)
    nvs.commit()
    esp32._reload()
    assert esp32.NVS("ns").get_i32("k") == 3
    esp32.set_flash_dir(None)  # a new, empty memory flash
    raises(OSError, esp32.NVS("ns").get_i32, "k")


def test_partition_placeholder():
    assert esp32.Partition.RUNNING != esp32.Partition.BOOT
    esp32.Partition.mark_app_valid_cancel_rollback()


# --- machine ---------------------------------------------------------------------------------


def test_machine_reset_raises_reset_requested():
    exc = raises(machine.ResetRequested, machine.reset)
    # Not an Exception: it must pass every `except Exception` and end the event loop, like a reboot.
    assert isinstance(exc, SystemExit) and not isinstance(exc, Exception)
    assert machine.reset_cause() == machine.SOFT_RESET
    raises(machine.ResetRequested, machine.soft_reset)


def test_machine_identity_and_clock():
    esp32.set_flash_dir(None)
    uid = machine.unique_id()
    assert isinstance(uid, bytes) and len(uid) == 6
    assert machine.unique_id() == uid
    assert machine.freq() == 240000000


def test_machine_unique_id_differs_per_flash_folder():
    first = _flash()
    second = tempdir("nvs")
    try:
        a = machine.unique_id()
        esp32.set_flash_dir(second)
        b = machine.unique_id()
        assert len(a) == len(b) == 6 and a != b
        esp32.set_flash_dir(first)
        assert machine.unique_id() == a
    finally:
        esp32.set_flash_dir(None)
        remove_tree(first)
        remove_tree(second)


def test_machine_pin_keeps_its_level():
    pin = machine.Pin(2, machine.Pin.OUT, value=0)
    assert pin.value() == 0
    pin.value(1)
    assert pin.value() == 1 and pin() == 1
    pin.off()
    assert pin.value() == 0


def test_machine_wdt_records_feeds():
    wdt = machine.WDT(timeout=8000)
    assert wdt.timeout == 8000 and wdt.feeds == 0
    before = wdt.last_feed
    wdt.feed()
    assert wdt.feeds == 1 and wdt.last_feed >= before


def test_machine_rtc_reads_a_plausible_date():
    t = machine.RTC().datetime()
    assert len(t) == 8 and t[0] >= 2024 and 1 <= t[1] <= 12 and 0 <= t[3] <= 6


# --- network ---------------------------------------------------------------------------------


def test_network_is_up_on_the_laptop_before_any_connect():
    network._reset()
    wlan = network.WLAN(network.STA_IF)
    assert wlan.isconnected()
    assert wlan.status() == network.STAT_GOT_IP
    assert wlan.status("rssi") == -55
    assert wlan.ifconfig() == ("127.0.0.1", "255.0.0.0", "127.0.0.1", "127.0.0.1")


def test_network_connect_needs_an_active_interface():
    network._reset()
    wlan = network.WLAN(network.STA_IF)
    raises(OSError, wlan.connect, "home", "pw")
    wlan.active(True)
    assert wlan.active()
    wlan.connect("home", "pw")
    assert wlan.isconnected()
    assert wlan.config("essid") == "home"
    assert network.connect_count() == 1


def test_network_state_is_shared_between_wlan_objects():
    network._reset()
    a = network.WLAN(network.STA_IF)
    a.active(True)
    a.connect("office", "pw")
    b = network.WLAN(network.STA_IF)
    assert b.active() and b.config("essid") == "office"
    b.disconnect()
    assert not a.isconnected()
    assert a.status() == network.STAT_IDLE


def test_network_simulated_wrong_password():
    network._reset()
    wlan = network.WLAN()
    wlan.active(True)
    network.simulate(status=network.STAT_WRONG_PASSWORD)
    wlan.connect("home", "bad")
    assert not wlan.isconnected()
    assert wlan.status() == network.STAT_WRONG_PASSWORD
    raises(OSError, wlan.status, "rssi")
    network.simulate()
    wlan.connect("home", "good")
    assert wlan.isconnected()


def test_network_simulated_link_drop():
    network._reset()
    wlan = network.WLAN()
    network.simulate(status=network.STAT_NO_AP_FOUND, drop_link=True)
    assert not wlan.isconnected()
    assert wlan.status() == network.STAT_NO_AP_FOUND


def test_network_empty_ssid_finds_no_network():
    network._reset()
    wlan = network.WLAN()
    wlan.active(True)
    wlan.connect("", "")
    assert not wlan.isconnected()
    assert wlan.status() == network.STAT_NO_AP_FOUND


def test_network_mac_is_the_unique_id_and_config_rejects_unknown_params():
    network._reset()
    wlan = network.WLAN()
    assert wlan.config("mac") == machine.unique_id()
    raises(ValueError, wlan.config, "no_such_param")
    wlan.config(reconnects=3)
    assert wlan.config("reconnects") == 3


def test_network_has_the_esp32_status_constants():
    for name in ("STAT_IDLE", "STAT_CONNECTING", "STAT_GOT_IP", "STAT_WRONG_PASSWORD",
                 "STAT_NO_AP_FOUND", "STAT_ASSOC_FAIL", "STAT_BEACON_TIMEOUT",
                 "STAT_HANDSHAKE_TIMEOUT"):
        assert isinstance(getattr(network, name), int)
    assert network.STA_IF == 0 and network.AP_IF == 1
