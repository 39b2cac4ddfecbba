# The watcher service: ticks each active watcher, reads its source, and puts a judging turn on the bus.
import asyncio

from mimi import platform
from mimi.bus.message import Message
from mimi.channels.system import check_target, system_message
from mimi.health import memory_errors
from mimi.platform import const
from mimi.watch import sources
from mimi.watch.limits import Limits, report
from mimi.watch.store import Store, WatchError, cut, is_local, waits_for_rule

WATCH_OK = "WATCH_OK"
_CHECK_MAX_S = const(30)  # longest sleep between two looks at the watcher list
_SETTLE_S = const(3)  # a new watcher, or one never evaluated, has its first tick this soon
_IN_FLIGHT_MAX_S = const(600)  # an unanswered turn stops blocking its watcher's next tick after this
FAILS_BEFORE_NOTICE = const(3)  # unreadable ticks in a row before the chat hears about it
_SAVE_PERIOD_S = const(600)  # quiet verdicts reach the flash at most this often (flash wear)
_OK_TRIM = " \t\r\n.!`*_\"'"

PROMPT = (
    "[watcher {name}: a check that runs every {interval} s, set up by the {role}; source {source}]\n"
    "Instruction: {instruction}\n"
    "Reading now: {reading}\n"
    "Earlier, oldest first:\n{history}\n"
    "Judge the reading with the instruction, using the earlier readings for trends. If nothing needs "
    "saying or doing now, answer exactly " + WATCH_OK + " and nothing else. Otherwise do what the "
    "instruction asks with your tools and/or write a short message: it is sent to {channel} chat {chat_id}. "
    "Do not repeat a message you already sent unless things changed."
)


def is_watch_ok(text):
    return str(text).strip(_OK_TRIM) == WATCH_OK


def _history_lines(watcher, now):
    lines = []
    for entry in watcher["history"]:
        lines.append("- {} s ago: {} -> {}".format(max(now - entry["t"], 0), entry["reading"], entry["verdict"]))
    return "\n".join(lines) or "(no earlier readings)"


class Watchers:
    """Watcher store + timer task + reply handling. Tools and console commands reach it with app.part("watchers"),
    made at the first need (parts.py) and started by App.start_late, at boot (offline: local rules act without the
    network). A watcher with a local rule is judged by the rule engine (watch/rules.py, made with the first)."""

    offline = True

    def __init__(self, app):
        self.app = app
        self.store = Store(app.flash.root)
        self.limits = Limits(app)
        self.evaluations = 0
        self.pushed = 0
        self._due = {}  # name -> ticks_ms of the next tick
        self._in_flight = {}  # name -> ticks_ms when its turn was queued
        self._fails = {}  # name -> unreadable ticks in a row
        self._saved_ms = platform.ticks_ms()
        self._wake = asyncio.Event()
        self.rules = None  # the rule engine, made with the first rule (engine())
        self.running = False  # run() began: pin edges and commands are taken from then on
        for watcher in self.store.watchers:
            if is_local(watcher):
                self.engine()
                break

    def engine(self):
        """The rule engine, made once (a board without rules never loads it)."""
        if self.rules is None:
            from mimi.watch.rules import Rules

            self.rules = Rules(self)
        return self.rules

    # -- what the tools and commands call --
    def add(self, name, source, interval, instruction, target, role, rule=None):
        """Add a watcher reporting to target=(channel, chat_id), judged by the model or, with a rule, by the
        board (a pin edge or a command without one waits for its rule: set_rule); ValueError (WatchError,
        SourceError, RuleError) says why not."""
        source = sources.check(self.app, source, role)
        event = sources.parse(source)["kind"] in sources.EVENTS
        if rule is not None or event:
            rule = self.engine().check(rule, source, role, name) if rule is not None else None
        channel, chat_id = check_target(target[0], target[1])
        watcher = self.store.add(name, source, interval, instruction, channel, chat_id, role, rule, event)
        self._started(watcher)
        return watcher

    def set_rule(self, name, rule):
        """Give a watcher a rule, replace it, or (None) take it away."""
        watcher = self.store.get(name)
        event = sources.parse(watcher["source"])["kind"] in sources.EVENTS
        if rule is not None:
            rule = self.engine().check(rule, watcher["source"], watcher["role"], name)
        watcher = self.store.set_rule(name, rule, event)
        self._forget(name)
        self._started(watcher)
        return watcher

    def _started(self, watcher):
        if self.rules is not None and self.running:  # else run() starts it with the others
            self.rules.start(watcher)
        self._due[watcher["name"]] = platform.ticks_add(platform.ticks_ms(), _SETTLE_S * 1000)
        self._wake.set()

    def remove(self, name):
        watcher = self.store.remove(name)
        self._forget(name)
        return watcher

    def pause(self, name, paused=True):
        watcher = self.store.set_paused(name, paused)
        self._forget(name)
        if not paused:
            self._started(watcher)
        self._wake.set()
        return watcher

    def watchers(self):
        return list(self.store.watchers)

    def _forget(self, name):
        self._due.pop(name, None)
        self._fails.pop(name, None)
        if self.rules is not None:
            self.rules.stop(name)

    # -- the timer --
    async def run(self):
        self.running = True
        for watcher in self.store.watchers if self.rules is not None else ():
            self.rules.start(watcher)  # pin edges and commands are taken from now on
        while True:
            await self._nap()
            online = self.app.wifi.is_up()  # the model needs the network; a local rule does not
            if self.rules is not None and self.rules.dirty:
                self._save_now(False)  # rules' counts, at most every _SAVE_PERIOD_S
            for watcher in self.due():
                if not online and "rule" not in watcher:
                    continue
                try:
                    await self.tick(watcher)
                except MemoryError as exc:
                    memory_errors.short("watchers", exc)
                except Exception as exc:  # one broken watcher must not stop the others
                    platform.log("watch: {} failed: {}".format(watcher["name"], exc))
                    platform.print_exception(exc)

    def _first_due(self, watcher, now_ms):
        delay = _SETTLE_S
        if watcher["history"]:  # after a reboot, keep the rhythm of the last evaluation
            since = platform.unix_time() - watcher["history"][-1]["t"]
            delay = min(max(watcher["interval"] - since, _SETTLE_S), watcher["interval"])
        return platform.ticks_add(now_ms, delay * 1000)

    def due(self):
        """The active watchers whose tick has come; their next tick is set one interval on."""
        now = platform.ticks_ms()
        found = []
        for watcher in self.store.watchers:
            name = watcher["name"]
            if watcher.get("paused") or waits_for_rule(watcher) or not watcher["interval"]:  # events: not polled
                continue
            if name not in self._due:
                self._due[name] = self._first_due(watcher, now)
            if platform.ticks_diff(now, self._due[name]) >= 0:
                self._due[name] = platform.ticks_add(now, watcher["interval"] * 1000)
                found.append(watcher)
        return found

    async def _nap(self):
        now, wait_ms = platform.ticks_ms(), _CHECK_MAX_S * 1000
        for watcher in self.store.watchers:
            due = self._due.get(watcher["name"])
            if not watcher.get("paused"):
                wait_ms = min(wait_ms, 0 if due is None else max(platform.ticks_diff(due, now), 0))
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), max(wait_ms, 50) / 1000)
        except asyncio.TimeoutError:
            pass

    def _busy(self, name):
        started = self._in_flight.get(name)
        if started is None:
            return False
        if platform.ticks_diff(platform.ticks_ms(), started) > _IN_FLIGHT_MAX_S * 1000:
            del self._in_flight[name]
            return False
        return True

    async def tick(self, watcher):
        """Read one watcher's source and queue its judging turn; returns what happened, in a word."""
        name = watcher["name"]
        if self._busy(name):
            platform.log("watch: {} skipped: its previous reading is still being judged".format(name))
            return "busy"
        local = "rule" in watcher
        try:
            read = sources.value if local else sources.read
            reading = await read(self.app, watcher["source"], sources.turn_of(watcher))
        except Exception as exc:  # SourceError, or a driver failing: the chat hears after a few in a row
            await self._unreadable(watcher, exc)
            return "unreadable"
        self._fails.pop(name, None)
        if local:  # judged here, now, by the rule
            outcome = await self.rules.reading(watcher, reading)
            self._record(watcher, sources.shown(reading), "rule: " + outcome, outcome == "fired")
            return outcome
        if not self.limits.may_evaluate(name):
            return "capped"
        self._in_flight[name] = platform.ticks_ms()
        try:
            await self.app.bus.inbound.put(self._turn(watcher, reading))
        except BaseException:
            self._in_flight.pop(name, None)
            raise
        self.evaluations += 1
        return "queued"

    async def _unreadable(self, watcher, exc):
        name = watcher["name"]
        fails = self._fails.get(name, 0) + 1
        self._fails[name] = fails
        reason = str(exc) or exc.__class__.__name__
        platform.log("watch: {} could not read {}: {}".format(name, watcher["source"], reason))
        self.store.record(watcher, platform.unix_time(), "unreadable: " + reason, "not judged", fails == 1)
        if fails == FAILS_BEFORE_NOTICE and self.limits.may_act("a notice from watcher " + name):
            text = "[watcher {}] cannot read its source {} ({} times in a row): {}".format(
                name, watcher["source"], fails, reason)
            await self.app.bus.outbound.put(Message(watcher["channel"], watcher["chat_id"], text, {"kind": "notice"}))
            self.pushed += 1

    def _turn(self, watcher, reading):
        now = platform.unix_time()
        content = PROMPT.format(
            name=watcher["name"], interval=watcher["interval"], role=watcher["role"], source=watcher["source"],
            instruction=watcher["instruction"], reading=reading, history=_history_lines(watcher, now),
            channel=watcher["channel"], chat_id=watcher["chat_id"])
        model = self.app.config.get("llm_config", "watch_model") or None
        # No session: readings every minute must not fill a chat's history; the watcher keeps its own.
        meta = {"source": "watcher", "watcher": watcher["name"], "reading": reading, "model": model,
                "role": watcher["role"], "session": None}
        return system_message((watcher["channel"], watcher["chat_id"]), content, meta)

    # -- a watcher turn's answer, from the system channel (channels/system.py) --
    async def judged_reply(self, message):
        request = message.meta.get("request") or {}
        name = request.get("watcher")
        self._in_flight.pop(name, None)
        calls = self.limits.take_calls(name)
        text = await self.judged(name, request, message.content, message.meta.get("kind"), calls)
        if text:
            await self._deliver(request["target"], text)

    async def judged(self, name, request, text, kind, calls):
        """Record a verdict; the text to push to the watcher's chat, or None for silence."""
        try:
            watcher = self.store.get(name)
        except WatchError:  # removed while its reading was judged (maybe by that very turn)
            watcher = None
        failed = kind in ("error", "refused")  # the API failed, or a budget refused the turn: log only
        quiet = failed or is_watch_ok(text)
        if failed:
            platform.log("watch: {}: the evaluation failed: {}".format(name, text))
        verdict = "evaluation failed" if failed else (WATCH_OK if quiet else "told: " + cut(text, 100))
        if calls:
            verdict += "; acted: " + ", ".join(call[0] + (" (done)" if call[3] else " (not done)") for call in calls)
        if watcher is not None:
            self._record(watcher, request.get("reading", ""), verdict, not quiet or bool(calls))
        head = "[watcher {}]".format(name)
        if calls:  # an action is always pushed (and counted already, as the call itself)
            said = "" if quiet else " " + text
            return "{}{}\nActions:\n{}".format(head, said, report(calls))
        if quiet or watcher is None:
            return None
        if not self.limits.may_act("a message from watcher " + name):
            platform.log("watch: {}: message not sent (hourly cap): {}".format(name, cut(text, 100)))
            return None
        return head + " " + text

    def _record(self, watcher, reading, verdict, important):
        try:
            self.store.record(watcher, platform.unix_time(), reading, verdict, False)
        except OSError as exc:  # a full flash must not cost the chat its message
            platform.log("watch: could not save the history: {}".format(exc))
        self._save_now(important)

    def _save_now(self, important):
        """watchers.json written now when it matters, else at most every _SAVE_PERIOD_S (flash wear)."""
        now_ms = platform.ticks_ms()
        if important or platform.ticks_diff(now_ms, self._saved_ms) >= _SAVE_PERIOD_S * 1000:
            try:
                self.store.save()
                self._saved_ms = now_ms
                if self.rules is not None:
                    self.rules.dirty = False
            except OSError as exc:
                platform.log("watch: could not save the history: {}".format(exc))

    async def dry_run(self, watcher):
        """What the rule would do with a reading now (watch_check); nothing is run."""
        command = sources.parse(watcher["source"])["kind"] == "command"
        try:
            value = "" if command else await sources.value(self.app, watcher["source"], sources.turn_of(watcher))
        except Exception as exc:  # SourceError, a driver failing
            return "the source could not be read: {}".format(exc)
        return self.engine().dry_run(watcher, value)

    async def ask(self, watcher, instruction, reading):
        """A rule's `ask`: the reading handed to the model with this instruction, as a model watcher's is
        (its evaluations cap and one turn at a time)."""
        name = watcher["name"]
        if self._busy(name) or not self.limits.may_evaluate(name):
            return
        self._in_flight[name] = platform.ticks_ms()
        self.evaluations += 1
        await self.app.bus.inbound.put(self._turn(dict(watcher, instruction=instruction), reading))

    async def _deliver(self, target, text):
        channel = self.app.channels.get(target[0])
        if channel is None or channel is self:
            platform.log("watch: no channel '{}' to deliver to {}".format(target[0], target[1]))
            return
        # Called from the dispatcher: deliver directly, since queueing on outbound could wait on ourselves.
        await channel.send(Message(target[0], target[1], text, {"kind": "notice"}))
        self.pushed += 1
