# The heartbeat: every so often the agent reads HEARTBEAT.md and tells the owner only what is due.
import asyncio

from mimi import platform
from mimi.channels.system import CONSOLE_TARGET, HEARTBEAT_OK, is_heartbeat_ok, system_message
from mimi.platform import const
from mimi.storage import files

FILE_NAME = "HEARTBEAT.md"
FILE_MAX = const(4096)  # bytes of HEARTBEAT.md read; the rest is ignored
PERIOD_MIN_S = const(60)  # a shorter heartbeat_s setting is raised to this
TRIGGER_WAIT_S = const(300)  # heartbeat_trigger waits this long for the outcome
BUSY_MAX_S = const(600)  # an unanswered heartbeat stops blocking the next one after this
_OFF_RECHECK_S = const(3600)  # while switched off, look again this often (a setting change wakes it)

PROMPT = (
    "[heartbeat] A periodic check of your task list HEARTBEAT.md. Open items:\n{}\n\n"
    "If nothing needs doing or telling your owner right now, answer exactly " + HEARTBEAT_OK
    + " and nothing else. Otherwise do what is due and write the message for your owner; "
    "it is sent to them. An item finished for good can be marked [x] in HEARTBEAT.md (edit_file)."
)


def open_items(text):
    """The lines of HEARTBEAT.md that still matter: no blanks, headers, comments or [x] items."""
    items = []
    in_comment = False
    for line in (text or "").split("\n"):
        line = line.strip()
        if in_comment or line.startswith("<!--"):
            in_comment = "-->" not in line
            continue
        if not line or line.startswith("#"):
            continue
        body = line[1:].lstrip() if line[0] in "-*+" else line
        if body.startswith("[x]") or body.startswith("[X]"):
            continue
        items.append(line)
    return items


def owner_target(app):
    """Where a heartbeat answer goes: the first allowlisted Telegram user when Telegram is
    configured (their private chat has the user's id), else the serial console."""
    from mimi.telegram.channel import parse_allowlist

    cfg = app.config
    if "telegram" in app.channels and cfg.is_set("tg_config", "bot_token"):
        ids = parse_allowlist(cfg.get("tg_config", "allowlist"))
        if ids:
            return "telegram", str(ids[0])
    return CONSOLE_TARGET


class Heartbeat:
    def __init__(self, app):
        self.app = app
        self.path = files.join(app.flash.root, FILE_NAME)
        self.runs = 0
        self.silent = 0
        self._busy_since = None  # ticks_ms while a heartbeat turn waits for its answer
        self._wake = asyncio.Event()
        app.services.append(self)
        app.config.subscribe(self._on_config)  # the heartbeat_trigger command is App's: it makes this first

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
                        print("heartbeat: skipped, the previous one is still being answered")
                except Exception as exc:  # a heartbeat failing must not stop the next one
                    print("heartbeat: failed: {}".format(exc))

    async def beat(self, on_reply=None):
        """Queue one heartbeat turn: the number of open items sent, 0 (no LLM call) when there
        are none, -1 when the previous heartbeat is still being answered."""
        if self._busy_since is not None:
            if platform.ticks_diff(platform.ticks_ms(), self._busy_since) < BUSY_MAX_S * 1000:
                return -1
        items = open_items(files.read_text(self.path, FILE_MAX))
        if not items:
            return 0
        self._busy_since = platform.ticks_ms()

        def done(text, kind):
            self._busy_since = None
            self.runs += 1
            if kind != "error" and is_heartbeat_ok(text):
                self.silent += 1
            if on_reply is not None:
                on_reply(text, kind)

        target = owner_target(self.app)
        # No session: the check must not fill a chat's history with HEARTBEAT_OK every half hour.
        meta = {"source": "heartbeat", "session": None, "quiet_errors": True, "on_reply": done}
        try:
            await self.app.bus.inbound.put(system_message(target, PROMPT.format("\n".join(items)), meta))
        except BaseException:
            self._busy_since = None
            raise
        return len(items)

    async def cmd_trigger(self):
        outcome = []
        finished = asyncio.Event()

        def on_reply(text, kind):
            outcome.append((text, kind))
            finished.set()

        count = await self.beat(on_reply)
        if count < 0:
            print("heartbeat: the previous one is still being answered")
            return
        if count == 0:
            print("heartbeat: no open items in {} (no LLM call)".format(self.path))
            return
        target = owner_target(self.app)
        print("heartbeat: checking {} open item(s)...".format(count))
        try:
            await asyncio.wait_for(finished.wait(), TRIGGER_WAIT_S)
        except asyncio.TimeoutError:
            print("heartbeat: no answer within {} s".format(TRIGGER_WAIT_S))
            return
        text, kind = outcome[0]
        if kind == "error":
            print("heartbeat: failed: {}".format(text))
        elif is_heartbeat_ok(text):
            print("heartbeat: nothing due ({}; nothing sent)".format(HEARTBEAT_OK))
        else:
            print("heartbeat: answer sent to {}:{}".format(target[0], target[1]))
