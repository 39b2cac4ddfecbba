# The watchdog fed by a healthy main loop, and the healthy-boot verdict. Loaded when needed: safe mode's
# stand-in for the agent (safe_mode.py), what a healthy boot does (boot_verdict.py, let go at once), the
# status lines (status_lines.py) and the test limits (limits.py).
import asyncio

import machine
from mimi import heap, platform
from mimi.platform import const
from mimi.health import crashes

_HEAP_SAMPLES = const(60)  # free heap (KB) once a minute for the last hour: the status view's sparkline
HEAP_SAMPLE_S = const(60)


class Health:
    """Starts the agent (or safe mode's stand-in) and the dispatcher, and feeds the watchdog while they work."""

    # Limits are class attributes; the host runner's --health option sets them for tests (limits.py).
    wdt_timeout_ms = 60000  # a hung event loop resets the chip after this long
    turn_limit_s = 600  # one agent turn longer than this is stuck
    healthy_after_s = 60  # up this long with the network and the agent alive: a healthy boot

    def __init__(self, app):
        self.app = app
        self.safe_mode = crashes.state["safe_mode"]
        self.crashes_at_boot = crashes.state["crashes"]
        self.healthy = False
        self.problem = None  # why the watchdog is not fed, or None
        self._core = []  # (name, task): the agent (or safe mode's responder) and the dispatcher
        self._wdt = None
        self._turn = None
        self._turn_since = 0
        self._heap = None  # free heap in KB a minute, a ring of _HEAP_SAMPLES (sample_heap), made at the first
        self._heap_at = 0  # the ring's next slot
        commands = app.console.commands
        self._status = commands.table["status"][0]
        commands.add("status", self.status, "status", 0, 0, "what is configured, connected and running")

    def start_core(self):
        """Create the agent and dispatcher tasks (safe mode: a responder instead of the agent)."""
        app = self.app
        if self.safe_mode:
            from mimi.health import safe_mode

            agent = safe_mode.start(self)
        else:
            from mimi.ota import bundle_root  # ota's boot part, let go after the boot: not kept for this one call

            crashes.inject_crash_if_asked(bundle_root(app.flash.root))
            agent = asyncio.create_task(app.agent.run())
        dispatcher = asyncio.create_task(app.dispatcher.run())
        self._core = [("agent", agent), ("dispatcher", dispatcher)]
        self._wdt = machine.WDT(timeout=self.wdt_timeout_ms)
        return [agent, dispatcher]

    def startable(self, services):
        """The network services to start: all of them, or in safe mode only the gateway."""
        return [s for s in services if self.held_back(s) is None]

    def held_back(self, service):
        """Why a network service does not run on this boot (safe mode runs the gateway only), or None."""
        if self.safe_mode and service is not getattr(self.app, "gateway", None):
            return "the board is in safe mode ({} crashes soon after boot): console and gateway only; restart to " \
                   "leave it".format(self.crashes_at_boot)
        return None

    def check(self):
        """None while the agent and dispatcher are alive and no turn is stuck; else why not."""
        for name, task in self._core:
            if task.done():
                return "the {} task has ended".format(name)
        busy = self.app.agent.busy_with
        now = platform.ticks_ms()
        if busy is None or busy is not self._turn:
            self._turn, self._turn_since = busy, now
        elif platform.ticks_diff(now, self._turn_since) > self.turn_limit_s * 1000:
            return "the agent has been stuck on one turn for over {} s".format(self.turn_limit_s)
        return None

    def tick(self):
        """Called once a second by the main loop: feed the watchdog only while healthy."""
        problem = self.check()
        if problem is None:
            if self._wdt is not None:
                self._wdt.feed()
            self.problem = None
            app = self.app
            if not (self.healthy or self.safe_mode) and app.wifi.is_up():  # the boot window: healthy yet?
                up_s = platform.ticks_diff(platform.ticks_ms(), app.started_ms) // 1000
                if app.agent.turns or up_s >= self.healthy_after_s:  # a turn completed, or up long enough
                    with heap.scope("boot"):  # given once a boot: its code is not kept
                        from mimi.health import boot_verdict

                        boot_verdict.give(self, up_s)
        elif problem != self.problem:
            self.problem = problem
            platform.log("watchdog: {}; no longer feeding it, the device resets within {} s".format(
                problem, self.wdt_timeout_ms // 1000))

    # -- the heap over the last hour (the web app's status view), sampled by the main loop --
    def sample_heap(self):
        free = platform.heap_info()[0]
        if free is None:
            return
        if self._heap is None:
            from array import array

            self._heap = array("H", bytes(2 * _HEAP_SAMPLES))
        self._heap[self._heap_at % _HEAP_SAMPLES] = min(free // 1024, 0xFFFF)
        self._heap_at += 1

    def heap_samples(self):
        """Free heap in KB a minute apart, oldest first (at most the last hour)."""
        if self._heap is None:
            return []
        count = min(self._heap_at, _HEAP_SAMPLES)
        return [self._heap[(self._heap_at - count + i) % _HEAP_SAMPLES] for i in range(count)]

    async def status(self):
        await self._status()
        from mimi.health import status_lines

        status_lines.tell(self)
