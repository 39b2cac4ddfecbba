# WiFi station: connects with the credentials in NVS, reconnects when they change, explains failures.
import asyncio

from mimi import platform
from mimi.platform import const

CONNECT_WAIT_S = const(30)

_STATUS_TEXT = {}


def _status_text(code):
    if not _STATUS_TEXT:
        import network

        for name, text in (
            ("STAT_IDLE", "idle"),
            ("STAT_CONNECTING", "connecting"),
            ("STAT_WRONG_PASSWORD", "wrong password"),
            ("STAT_NO_AP_FOUND", "network not found"),
            ("STAT_CONNECT_FAIL", "connection failed"),
            ("STAT_GOT_IP", "connected"),
        ):
            if hasattr(network, name):
                _STATUS_TEXT[getattr(network, name)] = text
    return _STATUS_TEXT.get(code, "status {}".format(code))


class WiFi:
    def __init__(self, config):
        self.config = config
        self.wlan = platform.wlan()
        config.subscribe(self._on_config)

    def _on_config(self, ns, key):
        if ns == "wifi_config":
            asyncio.create_task(self.connect())

    def is_up(self):
        return self.wlan.isconnected()

    async def connect(self, wait_s=CONNECT_WAIT_S):
        """Connect with the saved credentials; True once connected (at once if already up)."""
        ssid = self.config.get("wifi_config", "ssid")
        if not ssid:
            return self.is_up()
        self.wlan.active(True)
        try:
            self.wlan.disconnect()
        except OSError:
            pass
        self.wlan.connect(ssid, self.config.get("wifi_config", "password"))
        for _ in range(wait_s * 4):
            if self.wlan.isconnected():
                print("WiFi: connected to '{}' ({})".format(ssid, self.wlan.ifconfig()[0]))
                return True
            await asyncio.sleep_ms(250) if hasattr(asyncio, "sleep_ms") else await asyncio.sleep(0.25)
        print("WiFi: could not connect to '{}': {}".format(ssid, _status_text(self.wlan.status())))
        return False

    def summary(self):
        ssid = self.config.get("wifi_config", "ssid")
        if self.is_up():
            return "connected{} ({})".format(" to '{}'".format(ssid) if ssid else "", self.wlan.ifconfig()[0])
        if not ssid:
            return "not configured (wifi_set <ssid> <password>)"
        return "not connected to '{}': {}".format(ssid, _status_text(self.wlan.status()))

    def describe(self):
        lines = ["WiFi: " + self.summary()]
        if self.is_up():
            try:
                lines.append("  signal: {} dBm".format(self.wlan.status("rssi")))
            except (OSError, ValueError, TypeError):
                pass
        return lines
