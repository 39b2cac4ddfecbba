# WiFi station: joins the network saved in NVS and keeps the link up with backoff. Its words for the owner
# are loaded when needed: why a join failed (wifi_failure.py), the status line and commands (wifi_console.py).
import asyncio

from mimi import platform
from mimi.health import memory_errors
from mimi.net import ntp
from mimi.net.backoff import Backoff
from mimi.platform import const

_CONNECT_WAIT_S = const(20)  # one attempt: how long to wait for an address
RETRY_FIRST_S = const(2)  # wait before the first retry; it doubles after each failure...
RETRY_MAX_S = const(300)  # ...up to this
_LINK_CHECK_S = const(2)  # how often the link is checked
_POLL_S = 0.25


class WiFi:
    """Station keeper: run() holds the link; `up` is set while connected (services wait on it)."""

    def __init__(self, config):
        self.config = config
        self.wlan = platform.wlan()
        self.up = asyncio.Event()
        self.setup = None  # the onboarding access point (net/onboarding.py), once the app makes it
        self.backoff = Backoff(RETRY_FIRST_S, RETRY_MAX_S)
        self.connect_wait_s = _CONNECT_WAIT_S
        self.link_check_s = _LINK_CHECK_S
        self.failure = None  # why the last attempt failed, in words
        self.attempts = 0  # failed attempts since the last success
        self._kick = asyncio.Event()  # new credentials: stop waiting, connect now
        self._renew = False
        self._outcome = asyncio.Event()  # set after each attempt (connect() waits for the first)
        self._keeper = None
        self._clock = None
        self.next_try_ms = None  # while waiting to retry: when (ticks_ms) the next attempt starts
        config.subscribe(self._on_config)

    def _on_config(self, ns, key):
        if ns == "wifi_config":
            self._renew = True
            self.backoff.reset()
            self._kick.set()

    def is_up(self):
        return self.wlan.isconnected()

    async def connect(self, wait_s=_CONNECT_WAIT_S):
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
            try:
                renew, self._renew = self._renew, False
                if self.wlan.isconnected() and not renew:
                    if not self.up.is_set():
                        self._came_up()
                    await self._pause(self.link_check_s)
                    continue
                if self.up.is_set() and not renew:
                    self.up.clear()
                    from mimi.net import wifi_failure

                    self.failure = wifi_failure.lost_link(self.ssid(), self.wlan.status())
                ssid = self.ssid()
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
                from mimi.net import wifi_failure

                wifi_failure.cannot_join(ssid, self.failure, wait)
                self._outcome.set()
                self.next_try_ms = platform.ticks_add(platform.ticks_ms(), int(wait * 1000))
                await self._pause(wait)
                self.next_try_ms = None
            except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
                memory_errors.short("WiFi keeper", exc)
                await asyncio.sleep(memory_errors.AGAIN_S)

    def ssid(self):
        """The saved network's name (empty: none saved)."""
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
            verdict = exc
        else:
            for _ in range(int(self.connect_wait_s / _POLL_S)):
                if self.wlan.isconnected():
                    self._came_up()
                    return True
                if not platform.wlan_trying(self.wlan.status()):
                    break  # the driver gave its verdict
                await asyncio.sleep(_POLL_S)
            verdict = self.wlan.status()
        from mimi.net import wifi_failure

        self.failure = wifi_failure.explain(verdict, self.connect_wait_s)
        return False

    def _came_up(self):
        self.failure = None
        self.attempts = 0
        self.backoff.reset()
        ssid = self.ssid()
        platform.log("WiFi: connected{} ({})".format(" to '{}'".format(ssid) if ssid else "", self.ip()))
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
