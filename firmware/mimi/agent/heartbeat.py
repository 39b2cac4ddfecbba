# The heartbeat: every so often the agent reads HEARTBEAT.md and tells the owner only what is due.
# Only the waiting loop lives here; the check itself (heartbeat_check) loads once HEARTBEAT.md exists.
import asyncio

from mimi.health import memory_errors
from mimi.platform import const, log
from mimi.storage import files

FILE_NAME = "HEARTBEAT.md"
PERIOD_MIN_S = const(60)  # a shorter heartbeat_s setting is raised to this
_OFF_RECHECK_S = const(3600)  # while switched off, look again this often (a setting change wakes it)


class Heartbeat:
    def __init__(self, app):
        self.app = app
        self.path = files.join(app.flash.root, FILE_NAME)
        self.runs = 0
        self.silent = 0
        self.busy_since = None  # ticks_ms while a heartbeat turn waits for its answer
        self._wake = asyncio.Event()
        app.config.subscribe(self._on_config)

    def _on_config(self, ns, key):
        if ns == "agent_config" and key == "heartbeat_s":
            self._wake.set()

    def period_s(self):
        """Seconds between heartbeats, 0 when switched off."""
        seconds = self.app.config.get("agent_config", "heartbeat_s")
        return 0 if seconds <= 0 else max(seconds, PERIOD_MIN_S)

    async def run(self):
        while True:
            period = self.period_s()
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), period or _OFF_RECHECK_S)
                continue  # the setting changed: start a fresh period
            except asyncio.TimeoutError:
                pass
            if period and self.app.wifi.is_up():
                try:
                    if await self.beat() < 0:
                        log("heartbeat: skipped, the previous one is still being answered")
                except MemoryError as exc:
                    memory_errors.short("heartbeat", exc)
                except Exception as exc:  # a heartbeat failing must not stop the next one
                    log("heartbeat: failed: {}".format(exc))

    async def beat(self, on_reply=None):
        """Queue one heartbeat turn: the number of open items sent, 0 (no LLM call) when there
        are none, -1 when the previous heartbeat is still being answered."""
        if self.busy_since is None and not files.exists(self.path):
            return 0  # no HEARTBEAT.md: nothing open, and the check's code stays unloaded
        from mimi.agent.heartbeat_check import beat

        return await beat(self, on_reply)

    async def trigger(self):
        """One check now (heartbeat_trigger: now())."""
        from mimi.agent.heartbeat_check import trigger

        await trigger(self)


async def now(app):
    """The heartbeat_trigger command: the heartbeat made (if it was off) and one check now."""
    await app.part("heartbeat").trigger()
