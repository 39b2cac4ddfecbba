# First-boot onboarding: with no WiFi saved, an open access point MimiClaw-XXXX serves setup.
import asyncio

from mimi.platform import log

AP_PREFIX = "MimiClaw-"
_DEFAULT_IP = "192.168.4.1"


def ap_name():
    """MimiClaw-XXXX, XXXX from the last two bytes of the chip's unique id."""
    import machine

    uid = machine.unique_id()
    return AP_PREFIX + "{:02X}{:02X}".format(uid[-2], uid[-1])


class Onboarding:
    """Opened and closed by the WiFi keeper (net/wifi.py), its setup (app.py hands it over).
    The page (net/setup_page.py, microdot) is loaded only when the access point opens."""

    def __init__(self, app):
        self.app = app
        self.port = None  # the port the page is served on while open
        self.web = None
        self._ap = None
        self._task = None

    def is_open(self):
        return self._task is not None

    def address(self):
        ip = self._ap.ifconfig()[0] if self._ap is not None else _DEFAULT_IP
        port = self.port or self.app.config.get("wifi_config", "setup_port")
        return "http://{}/".format(ip) if port == 80 else "http://{}:{}/".format(ip, port)

    def describe(self):
        return "open WiFi '{}', page {}".format(ap_name(), self.address())

    def open(self):
        """Start the access point and the page (does nothing when open already)."""
        if self._task is not None:
            return
        import network

        from mimi.net import setup_page

        self._ap = network.WLAN(network.AP_IF)
        self._ap.active(True)
        self._ap.config(essid=ap_name(), authmode=network.AUTH_OPEN)
        self.port = self.app.config.get("wifi_config", "setup_port")
        if self.web is None:
            self.web = setup_page.web_app(self.app)
        self.web.server = None
        self._task = asyncio.create_task(self._serve(self.port))
        log("setup: no WiFi configured. Join the open WiFi '{}' and open {} to enter WiFi, "
              "bot token and API key (or type wifi_set <ssid> <password> here)".format(
                  ap_name(), self.address()))

    async def _serve(self, port):
        try:
            await self.web.start_server(host="0.0.0.0", port=port)
        except OSError as exc:
            log("setup: cannot serve the setup page on port {} ({})".format(port, exc))

    def close(self):
        """Stop the page and the access point (the station is connected now)."""
        if self._task is None:
            return
        if self.web.server is not None:
            self.web.shutdown()
        else:
            self._task.cancel()
        self._task = None
        self.port = None
        self.web = None  # the next open() builds it afresh; the memory is free meanwhile
        self._ap.active(False)
        log("setup: access point '{}' closed".format(ap_name()))
