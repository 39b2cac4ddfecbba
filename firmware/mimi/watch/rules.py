# The rule engine: watchers whose judge is a local rule, carried out by the board itself in milliseconds and
# without tokens (polled readings, pin edges, the owner's /commands). Made by the watcher service once a
# watcher has a rule (watch/service.py): a board without rules never loads it.
from mimi import platform
from mimi.bus.message import Message
from mimi.platform import const
from mimi.safety import NS, roles
from mimi.watch import sources
from mimi.watch.rule_schema import DEBOUNCE_MS, action_text, check as check_rule, describe, fill, holds, text_of
from mimi.watch.store import WatchError

_HOUR_S = const(3600)


def _lesser(role, other):
    return role if roles.rank(role) <= roles.rank(other) else other



class FireWindow:
    """A rule's firings in the last hour, in three numbers whatever the cap (a list of stamps would grow to the
    cap, 3600, and be copied at each firing): this clock hour's count, and the hour before's weighed by how
    much of it still lies within the last 60 minutes. Unix seconds: no ticks wrap; a clock set (NTP) or put
    back starts afresh."""

    def __init__(self):
        self.start = None  # Unix second this hour's count began
        self.before = self.now = 0  # firings in the hour before it, and in it

    def take(self, second, cap):
        """Count one more firing unless `cap` are within the last hour already; True when counted."""
        age = 0 if self.start is None else second - self.start
        if self.start is None or age < 0 or age >= 2 * _HOUR_S:
            self.start, self.before, self.now, age = second, 0, 0, 0
        elif age >= _HOUR_S:
            self.start, self.before, self.now, age = self.start + _HOUR_S, self.now, 0, age - _HOUR_S
        if self.now + self.before * (_HOUR_S - age) // _HOUR_S >= cap:
            return False
        self.now += 1
        return True

class Rules:
    """The rules of the watcher service (its store, limits and channels): what each rule's reading, edge or
    command does, its state kept in the watcher ("state": on, fired, at) so a reboot does not fire twice."""

    def __init__(self, service):
        self.service = service
        self.app = service.app
        self.last = {}  # name -> previous reading (for "changes"), this boot only
        self.fires = {}  # name -> its FireWindow (the firings of the last hour, counted in constant room)
        self.failing = []  # names whose failed action was reported (once, until one succeeds)
        self.edges = {}  # name -> _Edge
        self.words = {}  # a command's word -> the watcher's name
        self.dirty = False  # a firing counted since the last save of watchers.json

    # -- checking a rule when it is added --
    def check(self, rule, source, role, name):
        """The rule for this source, checked (RuleError/SourceError say which field); the rule's actions act
        with `role`, the role of whoever adds it."""
        spec = sources.parse(source)
        if spec["kind"] == "command":
            self._check_word(spec["word"], name)
        return check_rule(rule, spec["kind"], lambda tool, data: self._tool_problem(tool, data, role))

    def _check_word(self, word, name):
        from mimi.telegram import BOT_COMMANDS

        owner = self.words.get(word)
        if owner is not None and owner != name:
            raise WatchError("/{} is watcher {}'s command already".format(word, owner))
        if owner is None and (word in BOT_COMMANDS or self.app.console.commands.entry(word) is not None):
            raise WatchError("/{} is a built-in command; choose another word".format(word))

    def _tool_problem(self, name, data, role):
        from mimi.tools.registry import check_input

        tool = self.app.registry.tools.get(name)
        if tool is None:
            return "no tool named '{}' (tool_list shows them)".format(name)
        if name.startswith("watch_"):
            return "a rule cannot add or change watchers"
        problem = check_input(tool.schema, data)
        if problem:
            return "invalid input for {}: {}".format(name, problem)
        return sources.unattended_problem(self.app, name, tool, role, "this rule", "a rule runs")

    # -- starting and stopping what waits for events --
    def start(self, watcher):
        name, spec = watcher["name"], sources.parse(watcher["source"])
        self.stop(name)
        if not watcher.get("rule"):
            return
        if spec["kind"] == "edge" and not watcher.get("paused"):
            debounce = watcher["rule"].get("debounce_ms", DEBOUNCE_MS)
            from mimi.watch.edge import Edge

            self.edges[name] = Edge(self, name, spec["pin"], spec["edge"], debounce)
        elif spec["kind"] == "command":
            self.words[spec["word"]] = name
            self.app.console.commands.add(spec["word"], self._console(spec["word"]), spec["word"] + " [args]",
                                          0, -1, "rule {}: {}".format(name, describe(watcher["rule"])))

    def stop(self, name):
        self.last.pop(name, None)
        edge = self.edges.pop(name, None)
        if edge is not None:
            edge.close()
        for word in [w for w in self.words if self.words[w] == name]:
            del self.words[word]
            self.app.console.commands.table.pop(word, None)

    def _console(self, word):
        async def run(*args):  # `fan on` typed on the console is /fan on in the console's chat
            await self.app.console.chat("/{} {}".format(word, " ".join(args)).strip())
        return run

    # -- what a rule does --
    def decide(self, watcher, value, event):
        """The engine's decision on a reading (or, `event`, on a pin edge or a command's words), nothing changed
        or run: (step, actions). "fire": `do` (a polled rule is on once it fired); "release": a polled rule's
        `rearm` holds, or `when` is false again: it is off, its `otherwise` ([] when none) runs; "other": an event
        `when` does not hold: `otherwise`; "quiet" and "already fired" run nothing (actions None)."""
        rule = watcher["rule"]
        when = rule.get("when")
        if event:
            if when is None or holds(when, value):
                return "fire", rule["do"]
            return ("other", rule["otherwise"]) if "otherwise" in rule else ("quiet", None)
        if "changes" in when:
            return ("fire", rule["do"]) if holds(when, value, self.last.get(watcher["name"])) else ("quiet", None)
        if not (watcher.get("state") or {}).get("on"):
            return ("fire", rule["do"]) if holds(when, value) else ("quiet", None)
        rearm = rule.get("rearm")
        if holds(rearm, value) if rearm else not holds(when, value):
            return "release", rule.get("otherwise", [])
        return "already fired", None

    def held(self, watcher, invoker=None, step="fire"):
        """"cooling down" or "paused" when the rule may not run `step`'s actions now (nothing counted), else
        None. The cooldown holds only a firing of `do`: `otherwise` (the way back, e.g. the fan off) is never
        left undone for it, and a command typed by someone is always answered."""
        if step == "fire" and invoker is None and _cooldown_left(watcher) > 0:
            return "cooling down"
        return "paused" if watcher.get("paused") else None

    async def reading(self, watcher, value):
        """A polled reading: fires `do` when `when` becomes true (once, until `rearm` holds or `when` is false
        again, when `otherwise` runs). The outcome in a word."""
        state = watcher.setdefault("state", {"on": False, "fired": 0, "at": 0})
        step, actions = self.decide(watcher, value, False)
        self.last[watcher["name"]] = value
        if step == "fire":
            outcome = await self._fire(watcher, actions, value)
            if "changes" not in watcher["rule"]["when"]:
                state["on"] = outcome == "fired"
                self._save(state["on"])
            return outcome
        if step != "release":
            return "quiet"
        state["on"] = False
        self._save(True)
        return await self._fire(watcher, actions, value, step=step) if actions else "rearmed"

    async def event(self, watcher, value, args="", invoker=None):
        """A pin edge or a command: `do` when `when` holds (or there is none), else `otherwise`. invoker: the
        message of whoever typed the command (its role, at most the rule's, is the role its actions take)."""
        step, actions = self.decide(watcher, args if invoker is not None else value, True)
        if actions is None:
            return "quiet"
        return await self._fire(watcher, actions, value, args, invoker, step)

    async def _fire(self, watcher, actions, value, args="", invoker=None, step="fire"):
        name = watcher["name"]
        state = watcher.setdefault("state", {"on": False, "fired": 0, "at": 0})
        now = platform.unix_time()
        held = self.held(watcher, invoker, step)
        if held == "cooling down":
            return held
        if held is not None or not self._under_cap(watcher):  # a paused command still answers
            if invoker is not None:
                await self._tell(watcher, (invoker.channel, invoker.chat_id), ["rule {} is paused; watch_resume "
                                 "{} starts it again".format(name, name)], None, invoker)
            return "paused"
        role = watcher["role"] if invoker is None else _lesser(watcher["role"], _role_of(self.app, invoker))
        chat = (watcher["channel"], watcher["chat_id"]) if invoker is None else (invoker.channel, invoker.chat_id)
        from mimi.tools.turn import Turn

        turn = Turn(chat[0], chat[1], {"rule": name, "role": role}, role)
        said, failed = [], None
        for action in actions:  # in order; a failed tool stops the rest (a `say` after it would not be true)
            if "tool" in action:
                text, is_error = await self.app.registry.execute(action["tool"], action["input"], turn)
                if is_error:
                    failed = "{} failed: {}".format(action["tool"], text)
                    break
                if invoker is not None:
                    said.append("{}: {}".format(action["tool"], text))
            elif "say" in action:
                said.append(fill(action["say"], {
                    "value": text_of(value), "name": name, "time": platform.utc_stamp(now),
                    "source": watcher["source"], "args": args}))
            else:
                await self.service.ask(watcher, action["ask"], text_of(value))
        state["fired"], state["at"] = state["fired"] + 1, now
        self.dirty = True  # the count reaches the flash with the next save (service.flush_rules)
        await self._tell(watcher, chat, said, failed, invoker)
        return "fired" if not failed else "failed"

    async def _tell(self, watcher, chat, said, failed, invoker):
        """What a firing says: to whoever typed the command (always, failures included), else to the
        watcher's chat (a failure once, until an action succeeds again: the rule stays armed)."""
        name = watcher["name"]
        if failed and invoker is not None:
            said.append(failed)
        elif failed and name not in self.failing:
            self.failing.append(name)
            said.append("[rule {}] {} (the rule stays armed)".format(name, failed))
        elif not failed and name in self.failing:
            self.failing.remove(name)
        if invoker is not None:  # a command is always answered, as a reply to it
            meta = {"kind": "reply", "streamed": False, "request": invoker.meta}
            text = "\n".join(said) or "/{} done".format(sources.parse(watcher["source"])["word"])
            await self.app.bus.outbound.put(Message(chat[0], chat[1], text, meta))
        elif said:
            await self.app.bus.outbound.put(Message(chat[0], chat[1], "\n".join(said), {"kind": "notice"}))

    def _under_cap(self, watcher):
        """Count a firing; past safety_config.rule_fires_hour in an hour the rule is paused, the owner told."""
        name, cap = watcher["name"], self.app.config.get(NS, "rule_fires_hour")
        window = self.fires.get(name)
        if window is None:
            window = self.fires[name] = FireWindow()
        if window.take(platform.unix_time(), cap):
            return True
        self.fires.pop(name, None)
        self.service.pause(name)
        self.app.owner.tell("rule {} fired {} times within an hour (safety_config.rule_fires_hour), so it is "
                            "paused; watch_resume {} starts it again".format(name, cap, name))
        return False

    def _save(self, changed):
        """A polled rule's on/off reaches the flash at once: after a reboot it must not fire twice."""
        if changed:
            try:
                self.service.store.save()
                self.dirty = False
            except OSError as exc:  # a full flash: the state lives on in memory until the next save
                platform.log("watch: could not save a rule's state: {}".format(exc))

    def dry_run(self, watcher, value):
        """What the rule would do with this reading now, no action run (watch_check): the engine's own
        decision (decide, held)."""
        step, actions = self.decide(watcher, value, sources.parse(watcher["source"])["kind"] in sources.EVENTS)
        shown = text_of(value)
        if actions is None:
            return "reading {}: nothing to do ({})".format(shown, "not met" if step == "quiet" else step)
        would = "; ".join(action_text(a) for a in actions) or "nothing, and re-arm"
        held = self.held(watcher, step=step) if actions else None
        if held == "cooling down":
            held = "cooling down for {} s more (cooldown_s {})".format(_cooldown_left(watcher),
                                                                     watcher["rule"]["cooldown_s"])
        elif held is not None:
            held = "the rule is paused (watch_resume {})".format(watcher["name"])
        return "reading {}: would run {}{}".format(shown, would, ", but not now: " + held if held else "")

    # -- the owner's commands, taken before the agent's queue (App.deliver) --
    async def take(self, message):
        """True when the message is a rule's /command, run now; False leaves it for the agent."""
        text = message.text if isinstance(message.text, str) else ""
        if not text.startswith("/"):
            return False
        word, _, args = text[1:].partition(" ")
        name = self.words.get(word.split("@")[0].lower())
        if name is None:
            return False
        try:
            watcher = self.service.store.get(name)
        except WatchError:
            return False
        await self.event(watcher, args.strip(), args.strip(), message)
        return True

    def help_lines(self):
        """'/fan: rule fan: ...' for each command, for /help and the web chat."""
        return ["/{} \u2014 rule {}".format(word, self.words[word]) for word in sorted(self.words)]


def _cooldown_left(watcher):
    """Seconds before the rule may fire `do` again (cooldown_s after it last ran); 0 or less: it may."""
    cooldown = watcher["rule"].get("cooldown_s")
    return cooldown - (platform.unix_time() - (watcher.get("state") or {}).get("at", 0)) if cooldown else 0


def _role_of(app, message):
    from mimi.tools import turn

    return turn.of(app.config, message.channel, message.chat_id, message.meta).role
