# The watchdog fed by a healthy main loop, safe mode's reduced start, and the healthy-boot verdict.
import asyncio

import machine
from mimi import platform
from mimi.bus.message import Message
from mimi.health import crashes
from mimi.ota import bundle_root, mark_valid

SAFE_MODE_REPLY = ("The device is in safe mode after repeated crashes at startup: the agent is off. "
                   "Fix the cause (console or gateway), then type restart.")


class Health:
    """Starts the agent (or safe mode's stand-in) and the dispatcher, and feeds the watchdog while they work."""

    # Limits are class attributes; the host runner's --health option sets them for tests.
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
        commands = app.console.commands
        self._status = commands.table["status"][0]
        commands.add("status", self.status, "status", 0, 0, "what is configured, connected and running")

    def start_core(self):
        """Create the agent and dispatcher tasks (safe mode: a responder instead of the agent)."""
        app = self.app
        if self.safe_mode:
            print("SAFE MODE: {} crashes in a row soon after boot; console and gateway only, no agent, "
                  "no Telegram. Fix the cause, then type restart.".format(self.crashes_at_boot))
            agent = asyncio.create_task(self._safe_responder())
        else:
            crashes.inject_crash_if_asked(bundle_root(app.flash.root))
            agent = asyncio.create_task(app.agent.run())
        dispatcher = asyncio.create_task(app.dispatcher.run())
        self._core = [("agent", agent), ("dispatcher", dispatcher)]
        self._wdt = machine.WDT(timeout=self.wdt_timeout_ms)
        return [agent, dispatcher]

    def startable(self, services):
        """The network services to start: all of them, or in safe mode only the gateway."""
        if self.safe_mode:
            return [s for s in services if s is getattr(self.app, "gateway", None)]
        return services

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
            self._judge_boot()
        elif problem != self.problem:
            self.problem = problem
            print("watchdog: {}; no longer feeding it, the device resets within {} s".format(
                problem, self.wdt_timeout_ms // 1000))

    def _judge_boot(self):
        if self.healthy or self.safe_mode or not self.app.wifi.is_up():
            return
        up_s = platform.ticks_diff(platform.ticks_ms(), self.app.started_ms) // 1000
        if self.app.agent.turns == 0 and up_s < self.healthy_after_s:
            return
        self.healthy = True
        crashes.clear()
        valid = mark_valid()  # the OTA image is confirmed: no rollback at the next reset
        print("health: healthy boot ({}); crash count cleared{}".format(
            "a turn completed" if self.app.agent.turns else "up {} s".format(up_s),
            ", firmware marked valid" if valid else ""))

    async def _safe_responder(self):
        bus = self.app.bus
        while True:
            message = await bus.inbound.get()
            meta = {"kind": "error", "streamed": False, "request": message.meta}
            await bus.outbound.put(Message(message.channel, message.chat_id, SAFE_MODE_REPLY, meta))

    async def status(self):
        from mimi.ota import image

        await self._status()
        out = self.app.console.commands.out
        if self.safe_mode:
            out("  Health: SAFE MODE ({} crashes soon after boot): console and gateway only; restart to leave".format(
                self.crashes_at_boot))
        else:
            out("  Health: normal; boot {}; watchdog {}; {} early crashes".format(
                "healthy" if self.healthy else "not yet proven healthy",
                "fed" if self.problem is None else "STARVED ({})".format(self.problem), crashes.count()))
        out("  Firmware: {}".format(image.describe()))
        out("  Code: {}".format(platform.code_origin()))


def configure(text):
    """Host runner (--health): 'wdt_ms=2000,turn_s=3,healthy_s=5,claude_idle_s=2' shortens limits for tests."""
    from mimi.llm.claude import Claude
    from mimi.telegram.outbox import Outbox
    from mimi.telegram.poller import Poller
    from mimi.telegram.sender import Sender

    names = {"wdt_ms": (Health, "wdt_timeout_ms"), "turn_s": (Health, "turn_limit_s"),
             "healthy_s": (Health, "healthy_after_s"), "claude_first_byte_s": (Claude, "first_byte_s"),
             "claude_idle_s": (Claude, "idle_s"), "claude_deadline_s": (Claude, "deadline_s"),
             "tg_poll_s": (Poller, "poll_s"), "tg_grace_s": (Poller, "grace_s"),
             "tg_patience_s": (Sender, "patience_s"), "tg_outbox_s": (Outbox, "retry_s")}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key.strip() not in names:
            raise ValueError("unknown health limit '{}' (known: {})".format(key, ", ".join(names)))
        owner, attr = names[key.strip()]
        setattr(owner, attr, int(value))
