# WiFi station: joins the network saved in NVS, keeps the link up with backoff, explains failures.
import asyncio

from mimi import platform
from mimi.net import ntp
from mimi.net.backoff import Backoff
from mimi.platform import const

CONNECT_WAIT_S = const(20)  # one attempt: how long to wait for an address
RETRY_FIRST_S = const(2)  # wait before the first retry; it doubles after each failure...
RETRY_MAX_S = const(300)  # ...up to this
LINK_CHECK_S = const(2)  # how often the link is checked
_POLL_S = 0.25

# What a failed attempt means to the owner, by the network module's status name.
_FAILURES = (
    ("STAT_WRONG_PASSWORD", "wrong password"),
    ("STAT_NO_AP_FOUND", "network not found (out of range, or the name is wrong)"),
    ("STAT_HANDSHAKE_TIMEOUT", "handshake timed out (often a wrong password)"),
    ("STAT_ASSOC_FAIL", "the access point refused the connection"),
    ("STAT_BEACON_TIMEOUT", "the access point stopped answering"),
    ("STAT_CONNECT_FAIL", "connection failed"),
    ("STAT_IDLE", "not connected"),
    ("STAT_CONNECTING", "connecting"),
    ("STAT_GOT_IP", "connected"),
)
_STATUS_TEXT = {}


def status_text(code):
    """The station status code in words ("wrong password", "network not found (...)", ...)."""
    if not _STATUS_TEXT:
        import network

        for name, text in _FAILURES:
            if hasattr(network, name):
                _STATUS_TEXT[getattr(network, name)] = text
    return _STATUS_TEXT.get(code, "connection failed (status {})".format(code))


class WiFi:
    """Station keeper: run() holds the link; `up` is set while connected (services wait on it)."""

    def __init__(self, config):
        self.config = config
        self.wlan = platform.wlan()
        self.up = asyncio.Event()
        self.setup = None  # the onboarding access point (net/onboarding.py) registers itself here
        self.backoff = Backoff(RETRY_FIRST_S, RETRY_MAX_S)
        self.connect_wait_s = CONNECT_WAIT_S
        self.link_check_s = LINK_CHECK_S
        self.failure = None  # why the last attempt failed, in words
        self.attempts = 0  # failed attempts since the last success
        self._kick = asyncio.Event()  # new credentials: stop waiting, connect now
        self._renew = False
        self._outcome = asyncio.Event()  # set after each attempt (connect() waits for the first)
        self._keeper = None
        self._clock = None
        self._next_ms = None
        config.subscribe(self._on_config)

    def _on_config(self, ns, key):
        if ns == "wifi_config":
            self._renew = True
            self.backoff.reset()
            self._kick.set()

    def is_up(self):
        return self.wlan.isconnected()

    async def connect(self, wait_s=CONNECT_WAIT_S):
        """Start the keeper (once); True when the link is up after its first attempt."""
        if self._keeper is None:
            self._keeper = asyncio.create_task(self.run())
        try:
            await asyncio.wait_for(self._outcome.wait(), wait_s + 1)
        except asyncio.TimeoutError:
            pass
        return self.up.is_set()

    def stop(self):
        """Cancel the keeper and the clock refresher (the link itself stays as it is)."""
        for task in (self._keeper, self._clock):
            if task is not None:
                task.cancel()
        self._keeper = self._clock = None

    async def run(self):
        """Keep the station connected: reconnect with backoff; no WiFi saved: open the setup AP."""
        while True:
            renew, self._renew = self._renew, False
            if self.wlan.isconnected() and not renew:
                if not self.up.is_set():
                    self._came_up()
                await self._pause(self.link_check_s)
                continue
            if self.up.is_set() and not renew:
                self.up.clear()
                self.failure = status_text(self.wlan.status())
                print("WiFi: lost the link to '{}' ({}); reconnecting".format(
                    self._ssid(), self.failure))
            ssid = self._ssid()
            if not ssid:  # nothing to join: wait for credentials (console or setup page)
                if not self.wlan.isconnected():
                    self.failure = None
                    self._outcome.set()
                    if self.setup is not None:
                        self.setup.open()
                await self._pause(self.link_check_s)
                continue
            if await self._attempt(ssid):
                continue
            wait = self.backoff.next()
            self.attempts += 1
            print("WiFi: cannot join '{}': {}; next try in {} s".format(
                ssid, self.failure, wait))
            self._outcome.set()
            self._next_ms = platform.ticks_add(platform.ticks_ms(), int(wait * 1000))
            await self._pause(wait)
            self._next_ms = None

    def _ssid(self):
        return self.config.get("wifi_config", "ssid")

    async def _attempt(self, ssid):
        """One connection attempt; True once connected, else self.failure says why."""
        self.up.clear()
        self.wlan.active(True)
        try:
            self.wlan.disconnect()
        except OSError:
            pass
        try:
            self.wlan.connect(ssid, self.config.get("wifi_config", "password"))
        except OSError as exc:  # e.g. "Wifi Internal Error" while the radio is busy
            self.failure = "the WiFi driver refused to connect ({})".format(exc)
            return False
        polls = int(self.connect_wait_s / _POLL_S)
        for _ in range(polls):
            if self.wlan.isconnected():
                self._came_up()
                return True
            status = self.wlan.status()
            if status != _status("STAT_CONNECTING") and status != _status("STAT_IDLE"):
                break  # the driver gave its verdict
            await asyncio.sleep(_POLL_S)
        status = self.wlan.status()
        if status == _status("STAT_CONNECTING") or status == _status("STAT_IDLE"):
            self.failure = "no answer within {} s".format(self.connect_wait_s)
        else:
            self.failure = status_text(status)
        return False

    def _came_up(self):
        self.failure = None
        self.attempts = 0
        self.backoff.reset()
        ssid = self._ssid()
        print("WiFi: connected{} ({})".format(" to '{}'".format(ssid) if ssid else "", self.ip()))
        if self._clock is None:  # the first time: set the clock before anything uses TLS
            ntp.sync_and_report(ntp.RETRY_FIRST_S)
            self._clock = asyncio.create_task(ntp.keep(self.is_up))
        if self.setup is not None:
            self.setup.close()
        self.up.set()
        self._outcome.set()

    async def _pause(self, seconds):
        """Sleep, but wake at once when new credentials arrive."""
        try:
            await asyncio.wait_for(self._kick.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        self._kick.clear()

    def ip(self):
        return self.wlan.ifconfig()[0]

    def summary(self):
        ssid = self._ssid()
        if self.is_up():
            text = "connected{} ({})".format(" to '{}'".format(ssid) if ssid else "", self.ip())
        elif not ssid:
            text = "not configured (wifi_set <ssid> <password>"
            if self.setup is not None and self.setup.is_open():
                text += ", or the setup page: {}".format(self.setup.describe())
            text += ")"
        else:
            text = "not connected to '{}': {}".format(
                ssid, self.failure or status_text(self.wlan.status()))
            if self._next_ms is not None:
                left = max(0, platform.ticks_diff(self._next_ms, platform.ticks_ms())) // 1000
                text += " ({} failed attempts; next try in {} s)".format(self.attempts, left)
        return text + "; " + ntp.summary()

    def describe(self):
        lines = ["WiFi: " + self.summary()]
        if self.is_up():
            try:
                lines.append("  signal: {} dBm".format(self.wlan.status("rssi")))
            except (OSError, ValueError, TypeError):
                pass
        if self.setup is not None and self.setup.is_open():
            lines.append("  setup access point: {}".format(self.setup.describe()))
        return lines


def _status(name):
    import network

    return getattr(network, name, None)
