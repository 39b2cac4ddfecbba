# watch_add, watch_list, watch_pause, watch_remove: the agent sets up monitors that it judges itself.
from mimi.channels.system import encode_target
from mimi.tools.registry import Tool, ToolError
from mimi.watch import sources
from mimi.watch.sources import HELP
from mimi.watch.store import INTERVAL_MAX_S, INTERVAL_MIN_S, RULE_INTERVAL_MIN_S


class _WatchTool(Tool):
    tier = "owner"

    def _service(self):
        watchers = self.app.part("watchers")  # made at the first need (parts.py)
        if watchers is None:  # an app without the watch layer
            raise ToolError("watchers are not running on this device")
        return watchers


def _shown(watcher):
    shown = {"name": watcher["name"], "source": watcher["source"], "interval_s": watcher["interval"],
             "instruction": watcher["instruction"], "reports_to": encode_target(watcher["channel"], watcher["chat_id"]),
             "paused": bool(watcher.get("paused"))}
    if watcher["history"]:
        last = watcher["history"][-1]
        shown["last_reading"], shown["last_verdict"] = last["reading"], last["verdict"]
    if "rule" in watcher:
        from mimi.watch import rule_schema

        shown["rule"], shown["fired"] = rule_schema.describe(watcher["rule"]), watcher["state"]["fired"]
    return shown


_NAME = {"type": "string", "description": "the watcher's name (see watch_list)"}


class WatchAdd(_WatchTool):
    name = "watch_add"
    acting, level = True, "report"
    wants_turn = True  # the watcher reports to this chat and acts with this turn's role
    description = (
        "Start a watcher: every interval_s seconds the device reads `source` and you judge the reading "
        "with `instruction` and the recent readings, then stay silent, tell this chat, or act with your "
        "tools (actions are always reported to this chat). Sources: " + HELP + ". Examples: 'adc:4', "
        "'gpio:5', 'temperature', 'tool:system_info', 'https://host/data.json#sensors.0.temp'. Write the "
        "instruction in plain words: 'tell me if it drops below 5 C; switch GPIO 4 on above 35 C'. "
        "When the standing order is a fixed reaction (a threshold, a pin edge, a command), give a `rule` "
        "instead: the device carries it out itself, in milliseconds, without you and without tokens. "
        "Conditions: above, below, equals, changes, contains; actions: {\"tool\": name, \"input\": {..}}, "
        "{\"say\": text ({value} {name} {time} {source} {args} filled in)}, {\"ask\": instruction} (hands "
        "the reading to you). Example, 'when the chip is over 60 C turn GPIO 5 on and tell me, off again "
        "under 55': source 'temperature', interval_s 10, rule {\"when\": {\"above\": 60}, \"rearm\": "
        "{\"below\": 55}, \"do\": [{\"tool\": \"gpio_write\", \"input\": {\"pin\": 5, \"value\": 1}}, "
        "{\"say\": \"Chip at {value} C: fan on\"}], \"otherwise\": [{\"tool\": \"gpio_write\", \"input\": "
        "{\"pin\": 5, \"value\": 0}}]}."
    )
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "short name: letters, digits, _ or -"},
            "source": {"type": "string", "description": "what to read"},
            "interval_s": {"type": "integer", "description": "seconds between readings, {} to {} ({} with a rule; "
                           "0 for a pin edge or a command)".format(INTERVAL_MIN_S, INTERVAL_MAX_S,
                                                                     RULE_INTERVAL_MIN_S)},
            "instruction": {"type": "string", "description": "when to tell the chat, and what to do (with a "
                            "rule: what it is for)"},
            "rule": {"type": "object", "description": "a local rule: when (a condition), optional rearm (the "
                     "condition before it may fire again), do (actions), optional otherwise (actions when "
                     "`when` is false again), cooldown_s (least seconds between firings) and, for a pin edge, "
                     "debounce_ms (edges closer than this are a switch bouncing; default 50)"},
        },
        "required": ["name", "source", "interval_s", "instruction"],
    }

    def run(self, input, turn):
        if turn.watcher:
            raise ToolError("a watcher cannot start other watchers")
        rule = input.get("rule")
        try:
            if rule is None and sources.parse(input["source"])["kind"] in sources.EVENTS:
                raise ValueError("{} is an event: only a local rule takes it; give a rule".format(input["source"]))
            if rule is None and input["interval_s"] < INTERVAL_MIN_S:
                raise ValueError("the interval is {} to {} seconds; a rule may read every {} s".format(
                    INTERVAL_MIN_S, INTERVAL_MAX_S, RULE_INTERVAL_MIN_S))
            watcher = self._service().add(input["name"], input["source"], input["interval_s"],
                                          input["instruction"], turn.asker, turn.role, rule)
        except ValueError as exc:  # WatchError, SourceError, RuleError
            raise ToolError(str(exc))
        return _shown(watcher)


class WatchList(_WatchTool):
    name = "watch_list"
    description = "List the watchers: source, interval, instruction, where each reports, and its last verdict."
    schema = {"type": "object", "properties": {}, "required": []}
    acting, level = False, "autonomous"

    def run(self, input):
        watchers = [_shown(w) for w in self._service().watchers()]
        return {"watchers": watchers} if watchers else "no watchers"


class WatchPause(_WatchTool):
    name = "watch_pause"
    description = "Pause a watcher (it is kept, no readings), or resume it with resume=true."
    schema = {
        "type": "object",
        "properties": {"name": _NAME, "resume": {"type": "boolean", "description": "true to resume"}},
        "required": ["name"],
    }
    acting, level = True, "report"

    def run(self, input):
        resume = input.get("resume", False)
        try:
            watcher = self._service().pause(input["name"], not resume)
        except ValueError as exc:
            raise ToolError(str(exc))
        return "{} watcher {}".format("resumed" if resume else "paused", watcher["name"])


class WatchRemove(_WatchTool):
    name = "watch_remove"
    description = "Delete a watcher by name."
    schema = {"type": "object", "properties": {"name": _NAME}, "required": ["name"]}
    acting, level = True, "report"

    def run(self, input):
        try:
            watcher = self._service().remove(input["name"])
        except ValueError as exc:
            raise ToolError(str(exc))
        return "removed watcher {}".format(watcher["name"])


TOOLS = (WatchAdd, WatchList, WatchPause, WatchRemove)
