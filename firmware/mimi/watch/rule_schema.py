# A watcher's local rule, its schema: the fields, their checks (every error names its field), and how a rule
# reads in one line. The one owner of what a rule may hold: the table of fields in docs/watchers-and-rules.md
# is tested against FIELDS (tests/unit/test_rules.py). Loaded only once a watcher has a rule (watch/rules.py,
# the engine, imports it); a board without rules spends no heap on it.
from mimi.platform import const
from mimi.watch.sources import EVENTS
from mimi.watch.store import WatchError

CONDITIONS = ("above", "below", "equals", "changes", "contains")
FIELDS = ("when", "rearm", "do", "otherwise", "cooldown_s", "debounce_ms")  # in the docs' order
ACTIONS_MAX = const(4)  # actions in `do`, and again in `otherwise`
_TEXT_MAX = const(500)  # characters of a `say` text or an `ask` instruction
_CONTAINS_MAX = const(100)
_COOLDOWN_MAX_S = const(86400)
DEBOUNCE_MS = const(50)  # a pin edge closer than this to the last one taken is a switch bouncing
_DEBOUNCE_MAX_MS = const(10000)
RULE_MAX = const(1536)  # bytes of a rule as JSON: what a rule costs is bounded (16 rules: 24 KB on flash)
PLACES = ("{value}", "{name}", "{time}", "{source}", "{args}")  # what a `say` text has filled in


class RuleError(WatchError):
    """A rule that cannot be used; the text names the field and is meant for the user (or the model)."""


def _number(value):
    """The reading as a number, or None (numbers, numeric strings, true/false as 1/0)."""
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def text_of(value):
    """The reading as text, as a `say` shows it and `contains` looks into it."""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)


def _condition(where, condition, event):
    if not isinstance(condition, dict) or len(condition) != 1:
        raise RuleError("{}: a condition is one of {{{}}}, e.g. {{\"above\": 28}}".format(
            where, ": ..}, {".join(CONDITIONS)))
    kind = list(condition)[0]
    value = condition[kind]
    if kind not in CONDITIONS:
        raise RuleError("{}: unknown condition '{}' (one of {})".format(where, kind, ", ".join(CONDITIONS)))
    if kind in ("above", "below") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise RuleError("{}.{}: needs a number, like {{\"{}\": 28}}".format(where, kind, kind))
    if kind == "changes" and value is not True:
        raise RuleError("{}.changes: write {{\"changes\": true}}".format(where))
    if kind == "changes" and event:
        raise RuleError("{}.changes: a pin edge or a command is a change each time; leave `when` out".format(where))
    if kind == "contains" and (not isinstance(value, str) or not 0 < len(value) <= _CONTAINS_MAX):
        raise RuleError("{}.contains: needs a text of 1 to {} characters".format(where, _CONTAINS_MAX))
    if kind == "equals" and not (value is None or isinstance(value, (str, int, float, bool))):
        raise RuleError("{}.equals: needs a number, a text, true, false or null".format(where))
    return {kind: value}


def holds(condition, value, previous=None):
    """Does the reading meet the condition? (`changes`: does it differ from the previous reading)."""
    kind = list(condition)[0]
    wanted = condition[kind]
    if kind == "changes":
        return previous is not None and value != previous
    if kind == "contains":
        return wanted.lower() in text_of(value).lower()
    if kind == "equals":
        if wanted is None or isinstance(wanted, str):
            return value == wanted or (isinstance(value, (int, float)) and text_of(value) == wanted)
        number = _number(value)
        return number is not None and number == _number(wanted)
    number = _number(value)
    if number is None:
        return False
    return number > wanted if kind == "above" else number < wanted


def _actions(where, actions, tool_check):
    if isinstance(actions, dict):
        actions = [actions]
    if not isinstance(actions, list) or not 0 < len(actions) <= ACTIONS_MAX:
        raise RuleError("{}: a list of 1 to {} actions ({{\"tool\": .., \"input\": ..}}, {{\"say\": ..}} or "
                        "{{\"ask\": ..}})".format(where, ACTIONS_MAX))
    checked = []
    for i, action in enumerate(actions):
        at = "{}[{}]".format(where, i)
        if not isinstance(action, dict):
            raise RuleError("{}: an action is {{\"tool\": ...}}, {{\"say\": ...}} or {{\"ask\": ...}}".format(at))
        if "tool" in action:
            data = action.get("input", {})
            if set(action) - {"tool", "input"} or not isinstance(action["tool"], str) or not isinstance(data, dict):
                raise RuleError("{}: a tool action is {{\"tool\": \"<name>\", \"input\": {{...}}}}".format(at))
            problem = tool_check(action["tool"], data)
            if problem:
                raise RuleError("{}: {}".format(at, problem))
            checked.append({"tool": action["tool"], "input": data})
            continue
        kind = "say" if "say" in action else "ask" if "ask" in action else None
        if kind is None or len(action) != 1:
            raise RuleError("{}: an action is {{\"tool\": ...}}, {{\"say\": ...}} or {{\"ask\": ...}}".format(at))
        text = action[kind]
        if not isinstance(text, str) or not 0 < len(text.strip()) <= _TEXT_MAX:
            raise RuleError("{}.{}: needs a text of 1 to {} characters".format(at, kind, _TEXT_MAX))
        checked.append({kind: text.strip()})
    return checked


def check(rule, kind, tool_check):
    """The rule, checked and normalised; RuleError naming the field otherwise. `kind`: its source's kind
    (watch/sources.py parse); a pin edge or a command is an event, judged on its own (no `rearm`, `when` may be
    left out), and only a pin edge is debounced. tool_check(name, input) says why a tool action cannot run in
    a rule, or None."""
    import json

    event = kind in EVENTS
    if not isinstance(rule, dict):
        raise RuleError("rule: a JSON object with when, do and optionally rearm, otherwise, cooldown_s, "
                        "debounce_ms")
    for key in rule:
        if key not in FIELDS:
            raise RuleError("rule: unknown field '{}' ({})".format(key, ", ".join(FIELDS)))
    checked = {}
    if "when" in rule:
        checked["when"] = _condition("rule.when", rule["when"], event)
    elif not event:
        raise RuleError("rule.when: missing; e.g. {\"above\": 28}")
    if "rearm" in rule:
        if event:
            raise RuleError("rule.rearm: a pin edge or a command is judged each time; rearm needs a polled source")
        if "changes" in checked.get("when", {}):
            raise RuleError("rule.rearm: a change fires at each change; rearm is for above, below, equals, contains")
        checked["rearm"] = _condition("rule.rearm", rule["rearm"], event)
    if "do" not in rule:
        raise RuleError("rule.do: missing; the actions when the condition becomes true")
    checked["do"] = _actions("rule.do", rule["do"], tool_check)
    if "otherwise" in rule:
        if "changes" in checked.get("when", {}):
            raise RuleError("rule.otherwise: a change has no 'false again'; leave otherwise out")
        checked["otherwise"] = _actions("rule.otherwise", rule["otherwise"], tool_check)
    cooldown = rule.get("cooldown_s", 0)
    if isinstance(cooldown, bool) or not isinstance(cooldown, int) or not 0 <= cooldown <= _COOLDOWN_MAX_S:
        raise RuleError("rule.cooldown_s: seconds from 0 to {}".format(_COOLDOWN_MAX_S))
    if cooldown:
        checked["cooldown_s"] = cooldown
    if "debounce_ms" in rule:
        debounce = rule["debounce_ms"]
        if kind != "edge":
            raise RuleError("rule.debounce_ms: only a pin edge (gpio:<pin>:rising, falling or change) is "
                            "debounced; leave it out for this source")
        if isinstance(debounce, bool) or not isinstance(debounce, int) or not 0 <= debounce <= _DEBOUNCE_MAX_MS:
            raise RuleError("rule.debounce_ms: milliseconds from 0 to {}".format(_DEBOUNCE_MAX_MS))
        checked["debounce_ms"] = debounce
    if len(json.dumps(checked)) > RULE_MAX:
        raise RuleError("rule: longer than {} bytes as JSON; make it shorter".format(RULE_MAX))
    return checked


def fill(text, values):
    """A say text with {value}, {name}, {time}, {source} and {args} filled in (other braces left as typed)."""
    for place in PLACES:
        if place in text:
            text = text.replace(place, values.get(place[1:-1], ""))
    return text


def _condition_text(condition):
    kind = list(condition)[0]
    return "changes" if kind == "changes" else "{} {}".format(kind, text_of(condition[kind]))


def action_text(action):
    if "tool" in action:
        return "{} {}".format(action["tool"], text_of(action["input"]))
    kind = "say" if "say" in action else "ask"
    return "{} \"{}\"".format(kind, action[kind] if len(action[kind]) <= 40 else action[kind][:39] + "\u2026")


def describe(rule):
    """One readable line: 'when above 28 (again once below 26): gpio_write {..}; say "hot" | otherwise: ...'."""
    head = "when " + _condition_text(rule["when"]) if "when" in rule else "at each event"
    if "rearm" in rule:
        head += " (again once " + _condition_text(rule["rearm"]) + ")"
    line = head + ": " + "; ".join(action_text(a) for a in rule["do"])
    if "otherwise" in rule:
        line += " | otherwise: " + "; ".join(action_text(a) for a in rule["otherwise"])
    if "cooldown_s" in rule:
        line += " | at most every {} s".format(rule["cooldown_s"])
    if "debounce_ms" in rule:
        line += " | edges {} ms apart".format(rule["debounce_ms"])
    return line
