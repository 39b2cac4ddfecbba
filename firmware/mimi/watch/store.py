# Watchers kept in <data>/watchers.json: definitions and a short history, bounded, never fatal to read.
import json

from mimi.platform import const
from mimi.storage import files, json_store
from mimi.watch import FILE_NAME  # the one name of the file; watch.setup looks for it at boot

WATCHERS_MAX = const(8)  # judged by the model
RULES_MAX = const(16)  # with a local rule, besides those
_NAME_MAX = const(24)
_INSTRUCTION_MAX = const(500)  # characters of a watcher's instruction
_SOURCE_MAX = const(300)
INTERVAL_MIN_S = const(10)  # each tick may cost an LLM call
RULE_INTERVAL_MIN_S = const(1)  # a local rule's reading costs nothing but the reading
INTERVAL_MAX_S = const(86400)
HISTORY_MAX = const(6)  # readings and verdicts remembered per watcher
_READING_MAX = const(200)  # characters of a reading kept in the history (and shown to the model)
_VERDICT_MAX = const(160)
_FILE_MAX = const(32 * 1024)  # a bigger watchers.json is not ours: refuse to parse it
_FIELDS = ("name", "source", "interval", "instruction", "channel", "chat_id", "role")


class WatchError(ValueError):
    """A watcher that cannot be added or found; the text is meant for the user (or the model)."""


def cut(text, limit):
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def check_name(name):
    """The name if it is 1-24 letters, digits, _ or -; else WatchError."""
    name = str(name).strip()
    ok = 0 < len(name) <= _NAME_MAX
    for ch in name:
        ok = ok and ord(ch) < 128 and (ch.isalpha() or ch.isdigit() or ch in "_-")
    if not ok:
        raise WatchError("a watcher name is 1 to {} letters, digits, _ or -".format(_NAME_MAX))
    return name


def _valid(watcher):
    if not isinstance(watcher, dict):
        return False
    for field in _FIELDS:
        if field not in watcher:
            return False
    if "rule" in watcher and not (isinstance(watcher["rule"], dict) and isinstance(watcher.get("state"), dict)):
        return False
    return isinstance(watcher["interval"], int) and isinstance(watcher["name"], str)


def is_local(watcher):
    """Is it judged by the board: it has a local rule, or it waits for one (an event source, or a reading
    more often than the model may judge)."""
    return "rule" in watcher or watcher["interval"] < INTERVAL_MIN_S


def waits_for_rule(watcher):
    return "rule" not in watcher and watcher["interval"] < INTERVAL_MIN_S


def describe(watcher):
    """One line for a person: 'greenhouse  every 60 s  adc:4  -> telegram:42  [paused]  <instruction>' (a
    pin edge or a command: 'door  gpio:4:rising  -> ...')."""
    state = "  [paused]" if watcher.get("paused") else ""
    every = "every {} s  ".format(watcher["interval"]) if watcher["interval"] else ""
    return "{}  {}{}  -> {}:{}{}  {}".format(
        watcher["name"], every, watcher["source"], watcher["channel"], watcher["chat_id"],
        state, cut(watcher["instruction"], 80))


class Store:
    """The watcher list in memory, written atomically on every change to a definition."""

    def __init__(self, data_root):
        self.path = files.join(data_root, FILE_NAME)
        self.watchers = []
        self.load()

    def load(self):
        """Read watchers.json; a missing file is no watchers, a broken one is named on the console and kept aside."""
        self.watchers = []
        data = json_store.read(self.path, _FILE_MAX, "watchers")
        if data is None:
            return
        names = []
        for watcher in data["watchers"]:
            if _valid(watcher) and watcher["name"] not in names and len(names) < WATCHERS_MAX + RULES_MAX:
                history = watcher.get("history")
                watcher["history"] = history[-HISTORY_MAX:] if isinstance(history, list) else []
                names.append(watcher["name"])
                self.watchers.append(watcher)

    def save(self):
        files.write_atomic(self.path, self._pieces())

    def _pieces(self):
        """The file's JSON a watcher at a time: 24 watchers never make one string of up to 32 KB."""
        yield '{"watchers": ['
        for i, watcher in enumerate(self.watchers):
            yield (", " if i else "") + json.dumps(watcher)
        yield "]}"

    def get(self, name):
        for watcher in self.watchers:
            if watcher["name"] == name:
                return watcher
        raise WatchError("no watcher named '{}' (see watch_list)".format(name))

    def add(self, name, source, interval, instruction, channel, chat_id, role, rule=None, event=False):
        """Add and save a watcher; the source (and the rule) must be checked by the caller. A watcher with a
        rule is judged by the board, one without by the model; an event source (a pin edge, a command) or a
        reading more often than every INTERVAL_MIN_S waits for its rule (set_rule). Returns the watcher."""
        name = check_name(name)
        for watcher in self.watchers:
            if watcher["name"] == name:
                raise WatchError("a watcher named '{}' exists already; remove it first".format(name))
        if event:
            interval = 0  # an event source is not polled
        elif not isinstance(interval, int) or not RULE_INTERVAL_MIN_S <= interval <= INTERVAL_MAX_S:
            raise WatchError("the interval is {} to {} seconds ({} and more for the model to judge)".format(
                RULE_INTERVAL_MIN_S, INTERVAL_MAX_S, INTERVAL_MIN_S))
        self._check_room(rule is not None or interval < INTERVAL_MIN_S)
        instruction = (instruction or "").strip()
        if not instruction:
            raise WatchError("the watcher needs an instruction: what to tell or do, and when")
        if len(instruction) > _INSTRUCTION_MAX:
            raise WatchError("the instruction is longer than {} characters".format(_INSTRUCTION_MAX))
        if len(source) > _SOURCE_MAX:
            raise WatchError("the source is longer than {} characters".format(_SOURCE_MAX))
        watcher = {"name": name, "source": source, "interval": interval, "instruction": instruction,
                   "channel": channel, "chat_id": str(chat_id), "role": role, "paused": False, "history": []}
        if rule is not None:
            watcher["rule"], watcher["state"] = rule, {"on": False, "fired": 0, "at": 0}
        self.watchers.append(watcher)
        try:
            self.save()
        except OSError:
            self.watchers.pop()
            raise
        return watcher

    def _check_room(self, local):
        """WatchError when there are WATCHERS_MAX watchers judged by the model (or RULES_MAX local ones)."""
        count = len([w for w in self.watchers if is_local(w) == local])
        most = RULES_MAX if local else WATCHERS_MAX
        if count >= most:
            raise WatchError("there are already {} {}, the most allowed; remove one first".format(
                most, "watchers with a local rule" if local else "watchers judged by the model"))

    def set_rule(self, name, rule, event):
        """Give a watcher a rule (its state afresh), or take it away (None: the model judges it again, or an
        event source waits for a new rule). Returns the watcher."""
        watcher = self.get(name)
        local = rule is not None or watcher["interval"] < INTERVAL_MIN_S
        if is_local(watcher) != local:
            self._check_room(local)
        if rule is None:
            watcher.pop("rule", None)
            watcher.pop("state", None)
        else:
            watcher["rule"], watcher["state"] = rule, {"on": False, "fired": 0, "at": 0}
        self.save()
        return watcher

    def remove(self, name):
        watcher = self.get(name)
        self.watchers.remove(watcher)
        self.save()
        return watcher

    def set_paused(self, name, paused):
        watcher = self.get(name)
        watcher["paused"] = bool(paused)
        self.save()
        return watcher

    def record(self, watcher, when, reading, verdict, persist):
        """Append one evaluation to a watcher's history (oldest dropped); saved when `persist`."""
        history = watcher["history"]
        history.append({"t": when, "reading": cut(reading, _READING_MAX), "verdict": cut(verdict, _VERDICT_MAX)})
        del history[:-HISTORY_MAX]
        if persist:
            self.save()
