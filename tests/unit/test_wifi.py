# WiFi station keeper, backoff and NTP clock: on the network and ntptime stand-ins, both runtimes.
import asyncio

import network
import ntptime
from support import run

from mimi.settings import Config
from mimi.net import http, ntp, wifi, wifi_console, wifi_failure
from mimi.net.backoff import Backoff


class _MemoryNVS:
    """An in-memory NVS namespace: these tests need no flash folder."""

    stores = {}

    def __init__(self, ns):
        self.data = _MemoryNVS.stores.setdefault(ns, {})

    def set_blob(self, key, value):
        self.data[key] = value.encode() if isinstance(value, str) else bytes(value)

    def get_blob(self, key, buf):
        if key not in self.data:
            raise OSError(-0x1102, "ESP_ERR_NVS_NOT_FOUND")
        value = self.data[key]
        buf[:len(value)] = value
        return len(value)

    def erase_key(self, key):
        if key not in self.data:
            raise OSError(-0x1102, "ESP_ERR_NVS_NOT_FOUND")
        del self.data[key]

    def commit(self):
        pass


def _station(radio_lines=None):
    """A WiFi keeper with tiny waits; radio_lines: access points in reach ("ssid password")."""
    _MemoryNVS.stores.clear()
    network._reset()
    ntp._reset()
    ntptime.fail_next(0)
    if radio_lines is not None:
        from support import tempdir, write

        path = tempdir("radio") + "/radio"
        write(path, "\n".join(radio_lines) + "\n")
        network.use_radio(path)
    station = wifi.WiFi(Config(_MemoryNVS))
    station.backoff = Backoff(0.05, 0.2)
    station.link_check_s = 0.02
    station.connect_wait_s = 1
    return station


def _run(station, coro):
    async def body():
        try:
            await coro
        finally:
            station.stop()  # MicroPython's asyncio.run would resume leftover tasks later

    run(body())


async def _until(predicate, seconds=3):
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return False


def test_backoff_doubles_up_to_the_ceiling_and_resets():
    backoff = Backoff(wifi.RETRY_FIRST_S, wifi.RETRY_MAX_S)
    waits = [backoff.next() for _ in range(10)]
    assert waits == [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
    backoff.reset()
    assert backoff.next() == 2
    assert wifi.RETRY_FIRST_S < wifi.RETRY_MAX_S


def test_status_texts_tell_the_failures_apart():
    texts = [wifi_failure.status_text(network.STAT_WRONG_PASSWORD),
             wifi_failure.status_text(network.STAT_NO_AP_FOUND),
             wifi_failure.status_text(network.STAT_HANDSHAKE_TIMEOUT),
             wifi_failure.status_text(network.STAT_ASSOC_FAIL),
             wifi_failure.status_text(network.STAT_BEACON_TIMEOUT), wifi_failure.status_text(4242)]
    assert texts[0] == "wrong password"
    assert texts[1].startswith("network not found")
    assert "wrong password" in texts[2] and texts[2] != texts[0]
    assert texts[5] == "connection failed (status 4242)"
    assert len(set(texts)) == len(texts)
    explain = wifi_failure.explain
    assert explain(OSError("Wifi Internal Error"), 20) == "the WiFi driver refused to connect (Wifi Internal Error)"
    assert explain(network.STAT_CONNECTING, 20) == explain(network.STAT_IDLE, 20) == "no answer within 20 s"
    assert explain(network.STAT_WRONG_PASSWORD, 20) == "wrong password"


def test_the_laptop_link_is_up_at_once_and_the_clock_gets_set():
    station = _station()

    async def go():
        assert await station.connect()
        assert station.up.is_set() and ntp.synced()
        summary = wifi_console.summary(station)
        assert summary.startswith("connected (127.0.0.1)") and "clock synced" in summary

    _run(station, go())


def test_wrong_password_is_reported_then_new_credentials_connect_at_once():
    station = _station(["home right-password"])
    station.config.set("wifi_config", "ssid", "home")
    station.config.set("wifi_config", "password", "wrong-password")

    async def go():
        assert not await station.connect()
        assert station.failure == "wrong password"
        assert "not connected to 'home': wrong password" in wifi_console.summary(station)
        summary = wifi_console.summary(station)
        assert "right-password" not in summary and "wrong-password" not in summary
        station.backoff = Backoff(30, 60)  # only the new password can end this wait quickly
        await asyncio.sleep(0.1)
        station.config.set("wifi_config", "password", "right-password")
        assert await _until(station.up.is_set, 2)
        assert station.failure is None and station.attempts == 0

    _run(station, go())


def test_unknown_network_is_reported_as_not_found_and_retried_with_backoff():
    station = _station(["home pw"])
    station.config.set("wifi_config", "ssid", "office")
    station.config.set("wifi_config", "password", "pw")

    async def go():
        assert not await station.connect()
        assert station.failure.startswith("network not found")
        before = network.connect_count()
        await asyncio.sleep(0.4)  # waits 0.05, 0.1, 0.2: three more tries at most
        tries = network.connect_count() - before
        assert 2 <= tries <= 3
        assert station.attempts == 1 + tries

    _run(station, go())


def test_a_dropped_link_is_noticed_and_rejoined():
    station = _station(["home pw"])
    station.config.set("wifi_config", "ssid", "home")
    station.config.set("wifi_config", "password", "pw")
    path = network._state["radio"]

    async def go():
        assert await station.connect()
        with open(path, "w") as f:
            f.write("neighbour x\n")  # the access point goes away
        assert await _until(lambda: not station.up.is_set())
        assert await _until(lambda: station.failure is not None and "not found" in station.failure)
        with open(path, "w") as f:
            f.write("home pw\n")
        assert await _until(station.up.is_set)

    _run(station, go())


def test_no_ssid_and_no_link_opens_the_setup_access_point():
    station = _station([])
    opened = []

    class _Setup:
        def open(self):
            opened.append(True)

        def close(self):
            opened.append(False)

        def is_open(self):
            return bool(opened) and opened[-1]

        def describe(self):
            return "open WiFi 'MimiClaw-TEST'"

    station.setup = _Setup()

    async def go():
        assert not await station.connect()
        assert opened and opened[-1]
        assert "not configured" in wifi_console.summary(station) and "MimiClaw-TEST" in wifi_console.summary(station)

    _run(station, go())


def test_ntp_failures_are_retried_and_https_waits_for_the_clock():
    ntp._reset()
    ntptime.fail_next(2)
    sets = ntptime.calls()[1]
    assert not ntp.sync()
    assert ntp.summary().startswith("clock not set yet (NTP: no answer from the time server")

    async def go():
        exc = None
        try:
            await http.request("GET", "https://api.example.com/")
        except http.HTTPError as error:
            exc = error
        assert exc is not None and not isinstance(exc, http.TLSError)
        assert "clock is not set yet" in str(exc) and "api.example.com" in str(exc)
        task = asyncio.create_task(ntp.keep(lambda: True, Backoff(0.02, 0.05)))
        assert await _until(ntp.synced, 2)
        task.cancel()
        assert ntptime.calls()[1] == sets + 1  # set once: after the second failure

    run(go())
    assert ntp.summary().startswith("clock synced (NTP, ")


def test_plain_http_does_not_wait_for_the_clock():
    ntp._reset()

    async def go():
        try:
            await http.request("GET", "http://127.0.0.1:9/", read_timeout=1)
        except http.HTTPError as exc:
            return str(exc)

    text = run(go())
    assert text.startswith("cannot reach 127.0.0.1:9") and "clock" not in text


def test_the_access_point_is_named_after_the_chip():
    import machine

    from mimi.net import onboarding

    uid = machine.unique_id()
    name = onboarding.ap_name()
    assert name == "MimiClaw-{:02X}{:02X}".format(uid[-2], uid[-1]) and len(name) == 13


def test_radio_standin_joins_listed_networks_and_keeps_ap_settings_apart():
    _station(["home pw", "cafe "])
    sta, ap = network.WLAN(network.STA_IF), network.WLAN(network.AP_IF)
    assert not sta.isconnected() and sta.status() == network.STAT_IDLE
    sta.active(True)
    sta.connect("cafe", "")
    assert sta.isconnected()  # an open network: empty password
    sta.connect("home", "nope")
    assert sta.status() == network.STAT_WRONG_PASSWORD
    ap.active(True)
    ap.config(essid="MimiClaw-TEST", authmode=network.AUTH_OPEN)
    assert ap.config("essid") == "MimiClaw-TEST" and sta.config("essid") == "home"
    assert ap.ifconfig()[0] == "192.168.4.1"
    network._reset()


_WORDS = ("mimi.net.wifi_failure", "mimi.net.wifi_console")


def _words_loaded():
    import sys

    return [name for name in _WORDS if name in sys.modules]


def test_a_boot_that_connects_and_a_watched_link_load_none_of_the_words():
    from mimi import heap

    station = _station(["home pw"])
    station.config.set("wifi_config", "ssid", "home")
    station.config.set("wifi_config", "password", "pw")
    for name in _WORDS:
        heap.forget(name)

    async def go():
        assert await station.connect()
        await asyncio.sleep(0.1)  # the keeper watches the link a few times
        assert station.up.is_set() and _words_loaded() == []

    _run(station, go())


def test_a_failed_join_loads_its_explanation_and_a_typed_command_the_console_part():
    from mimi import heap
    from stub_app import stub_app
    from support import remove_tree

    app = stub_app("wifi_words")
    try:
        lines = []
        app.console.commands.out = lines.append
        for name in _WORDS:
            heap.forget(name)
        run(app.console.commands.execute("wifi_status"))
        assert _words_loaded() == ["mimi.net.wifi_console"]  # the link is up: no failure to explain
        assert lines[0].startswith("WiFi: connected (127.0.0.1); clock ") and lines[1] == "  signal: -55 dBm"
        for name in _WORDS:
            heap.forget(name)
        station = _station(["home right-password"])
        station.config.set("wifi_config", "ssid", "home")
        station.config.set("wifi_config", "password", "wrong-password")
        station.backoff = Backoff(30, 60)  # then a long wait: the status line counts it down

        async def go():
            assert not await station.connect()
            assert _words_loaded() == ["mimi.net.wifi_failure"]  # why it failed; no command typed yet

        _run(station, go())
        assert station.failure == "wrong password"
        app.wifi = station
        run(app.console.commands.execute("wifi_status"))
        assert _words_loaded() == list(_WORDS)
        assert lines[-1].startswith("WiFi: not connected to 'home': wrong password (")
        assert " failed attempts; next try in " in lines[-1]
    finally:
        remove_tree(app.top)
