# Local rules: a watcher's judge the board carries out itself (watch/rule_schema.py, watch/rules.py): checked when
# added, fired once per crossing, re-armed, kept over a reboot, capped, answering the owner's /commands.
import asyncio
import json

import machine
from support import NotImported, imported, raises, remove_tree, run, tempdir, write
from test_structure import _firmware_root
from test_watch import OWNER_CHAT, _app, _sensors
from test_watch import _done as _watch_done

from mimi.bus.message import Message
from mimi.safety import policy
from mimi.watch import rule_schema
from mimi.watch.rule_schema import RuleError, holds
from mimi.watch.store import RULES_MAX, WATCHERS_MAX, Store, WatchError

FAN_ON = {"tool": "gpio_write", "input": {"pin": 5, "value": 1}}
FAN_OFF = {"tool": "gpio_write", "input": {"pin": 5, "value": 0}}
HEAT = {"when": {"above": 28}, "rearm": {"below": 26}, "do": [FAN_ON, {"say": "hot: {value} C at {name}"}],
        "otherwise": [FAN_OFF]}


def _done(app):
    _watch_done(app)


def _out(app):
    found = []
    while not app.bus.outbound.empty():
        found.append(app.bus.outbound.get_nowait())
    return found


def _typed(app, *lines):
    """What console commands print."""
    import mimi.platform as platform

    out = []
    saved, platform.console_write = platform.console_write, out.append
    try:
        for line in lines:
            run(app.console.commands.execute(line))
    finally:
        platform.console_write = saved
    return "".join(out)


def _temperature(path, degrees):
    write(path, json.dumps({"temperature": degrees, "gpio": {"4": 0}}))


def _rules_app(top, degrees=20):
    app = _app(_sensors(top, {"temperature": degrees, "gpio": {"4": 0}}))
    policy.setup(app)  # roles and levels, as on the board
    app.config.set("safety_config", "calls", "100")  # these tests switch the fan more often than a chat
    return app


def test_conditions_compare_numbers_texts_and_changes():
    assert holds({"above": 28}, 28.5) and not holds({"above": 28}, 28) and holds({"below": 5}, "4.5")
    assert not holds({"above": 1}, "warm") and holds({"equals": 1}, True) and holds({"equals": "on"}, "on")
    assert holds({"equals": 1}, "1") and not holds({"equals": "ON"}, "on")
    assert holds({"contains": "Alarm"}, {"state": "ALARM raised"})
    assert holds({"changes": True}, 2, 1) and not holds({"changes": True}, 2, 2) and not holds({"changes": True}, 2)


def test_a_rule_is_checked_when_added_and_every_error_names_its_field():
    top = tempdir("rcheck")
    app = _rules_app(top)
    try:
        add = app.part("watchers").add

        def refused(rule, source="temperature", role="owner"):
            return str(raises(WatchError, add, "r", source, 5, "a rule", OWNER_CHAT, role, rule))

        assert refused({"when": {"above": 1}, "do": [FAN_ON], "colour": 1}).startswith("rule: unknown field 'colour'")
        assert refused({"when": {"hotter": 1}, "do": [FAN_ON]}).startswith("rule.when: unknown condition 'hotter'")
        assert refused({"when": {"above": "x"}, "do": [FAN_ON]}).startswith("rule.when.above: needs a number")
        assert refused({"when": {"above": 1}}).startswith("rule.do: missing")
        assert refused({"do": [FAN_ON]}).startswith("rule.when: missing")
        assert refused({"when": {"above": 1}, "do": [{"tool": "teleport", "input": {}}]}).startswith(
            "rule.do[0]: no tool named 'teleport'")
        assert refused({"when": {"above": 1}, "do": [{"tool": "gpio_write", "input": {"pin": 5}}]}).startswith(
            "rule.do[0]: invalid input for gpio_write: missing required field 'value'")
        assert "rule.do[0]: gpio_write needs the operator role" in refused({"when": {"above": 1}, "do": [FAN_ON]},
                                                                              role="observer")
        assert refused({"when": {"above": 1}, "do": [FAN_ON], "cooldown_s": -1}).startswith("rule.cooldown_s")
        assert refused({"when": {"changes": True}, "do": [FAN_ON], "otherwise": [FAN_OFF]}).startswith(
            "rule.otherwise:")
        assert refused({"rearm": {"below": 1}, "do": [FAN_ON]}, "gpio:4:rising").startswith("rule.rearm:")
        policy.set_level(app.config, "gpio_write", "confirm", app.registry.tools["gpio_write"])
        assert "set to confirm (tool_policy): nobody is there to press Approve" in refused(
            {"when": {"above": 1}, "do": [FAN_ON]})
        assert refused({"do": [FAN_ON]}, "command:/help").startswith("/help is a built-in command")
        assert refused({"do": [FAN_ON]}, "command:/status").startswith("/status is a built-in command")
        assert app.part("watchers").watchers() == []  # nothing refused was kept
    finally:
        _done(app)
        remove_tree(top)


def test_a_rule_with_rearm_fires_once_per_crossing_and_otherwise_runs_on_the_way_down():
    top = tempdir("rheat")
    app = _rules_app(top)
    sensors = top + "/sensors.json"
    try:
        watcher = app.part("watchers").add("heat", "temperature", 1, "fan over 28 C", OWNER_CHAT, "operator", HEAT)
        outcomes = []
        for degrees in (20, 29, 30, 27, 29, 25, 29):  # over, still over, in between, over again, down, up
            _temperature(sensors, degrees)
            outcomes.append(run(app.part("watchers").tick(watcher)))
        assert outcomes == ["quiet", "fired", "quiet", "quiet", "quiet", "fired", "fired"]
        said = [m.content for m in _out(app)]
        assert said == ["hot: 29 C at heat", "hot: 29 C at heat"]  # the fan's own calls say nothing more
        assert machine.written(5)[0] == 1 and watcher["state"] == dict(watcher["state"], on=True, fired=3)
        assert app.bus.inbound.empty()  # no model turn, no token
    finally:
        _done(app)
        remove_tree(top)


def test_a_rule_survives_a_restart_and_does_not_fire_twice():
    top = tempdir("rboot")
    app = _rules_app(top, degrees=30)
    try:
        watcher = app.part("watchers").add("heat", "temperature", 1, "fan over 28 C", OWNER_CHAT, "operator", HEAT)
        assert run(app.part("watchers").tick(watcher)) == "fired"
        kept = Store(app.flash.root).get("heat")  # what a reboot reads back
        assert kept["rule"] == watcher["rule"] and kept["state"]["on"] is True and kept["state"]["fired"] == 1
        app.watchers = None  # a restart on the same flash, still above the threshold
        app.services, app.running = [], []
        again = app.part("watchers").store.get("heat")
        assert app.part("watchers").rules is not None  # the engine came back with the rule
        assert run(app.part("watchers").tick(again)) == "quiet"  # it fired before the reboot: not again
    finally:
        _done(app)
        remove_tree(top)


def test_a_failed_action_is_reported_once_and_the_rule_stays_armed():
    top = tempdir("rfail")
    app = _rules_app(top, degrees=30)
    try:
        rule = {"when": {"above": 28}, "do": [{"tool": "gpio_write", "input": {"pin": 6, "value": 1}}]}
        app.config.set("tool_config", "gpio_allow", "4,5,6")
        watcher = app.part("watchers").add("heat", "temperature", 1, "x", OWNER_CHAT, "owner", rule)
        app.config.set("tool_config", "gpio_allow", "4,5")  # the owner takes pin 6 back
        assert [run(app.part("watchers").tick(watcher)) for _ in range(3)] == ["failed"] * 3
        (report,) = _out(app)
        assert report.content.startswith("[rule heat] gpio_write failed: GPIO 6 is not allowed")
        assert "stays armed" in report.content and watcher["state"]["on"] is False
    finally:
        _done(app)
        remove_tree(top)


def test_a_rule_that_loops_is_paused_by_its_hourly_cap_and_the_owner_told():
    top = tempdir("rloop")
    app = _rules_app(top)
    sensors = top + "/sensors.json"
    try:
        app.config.set("safety_config", "rule_fires_hour", "3")
        rule = {"when": {"changes": True}, "do": [{"say": "now {value}"}]}
        watcher = app.part("watchers").add("flap", "temperature", 1, "x", OWNER_CHAT, "owner", rule)
        for degrees in range(20, 26):
            _temperature(sensors, degrees)
            run(app.part("watchers").tick(watcher))
        assert len(_out(app)) == 3 and watcher["paused"]
        assert app.owner.told == ["rule flap fired 3 times within an hour (safety_config.rule_fires_hour), so it "
                                  "is paused; watch_resume flap starts it again"]
    finally:
        _done(app)
        remove_tree(top)


def test_an_owner_command_runs_at_once_for_the_roles_its_author_has():
    top = tempdir("rcmd")
    app = _rules_app(top)
    try:
        rule = {"when": {"equals": "on"}, "do": [FAN_ON, {"say": "fan on ({args})"}], "otherwise": [FAN_OFF]}
        app.part("watchers").add("fan", "command:/fan", 0, "the fan", OWNER_CHAT, "operator", rule)
        app.part("watchers").rules.start(app.part("watchers").store.get("fan"))
        operator = Message("telegram", "7", "/fan on", {"user_id": 7, "role": "operator", "update_id": 3})
        run(app.deliver(operator))
        assert app.bus.inbound.empty()  # taken before the agent's queue: no model call
        (reply,) = _out(app)
        assert (reply.chat_id, reply.meta["kind"], reply.meta["request"]["update_id"]) == ("7", "reply", 3)
        assert 'gpio_write: {"pin": 5, "value": 1}' in reply.content and "fan on (on)" in reply.content
        observer = Message("telegram", "9", "/fan@mimi_bot off", {"user_id": 9, "role": "observer"})
        run(app.deliver(observer))
        refused = _out(app)[0].content
        assert "gpio_write failed: gpio_write was not run: it needs the operator role" in refused
        assert machine.written(5)[0] == 1  # the observer switched nothing off
        run(app.deliver(Message("telegram", "7", "/weather today", {"role": "operator"})))
        assert app.bus.inbound.get_nowait().content == "/weather today"  # not a rule: the agent's
        assert app.part("watchers").rules.help_lines() == ["/fan \u2014 rule fan"]
        assert app.console.commands.entry("fan")[1] == "fan [args]"  # and `fan off` on the console
        app.console.chat = lambda text: app.deliver(Message("cli", "console", text, {}))  # as Console's
        run(app.console.commands.execute("fan off"))
        assert machine.written(5)[0] == 0 and "gpio_write" in _out(app)[0].content
    finally:
        _done(app)
        remove_tree(top)


def test_a_pin_edge_switches_a_pin_and_says_so_without_the_model():
    top = tempdir("redge")
    app = _rules_app(top)
    sensors = top + "/sensors.json"
    try:
        rule = {"do": [FAN_ON, {"say": "door open"}]}
        app.part("watchers").add("door", "gpio:4:rising", 0, "the door", OWNER_CHAT, "owner", rule)

        async def press():
            app.part("watchers").rules.start(app.part("watchers").store.get("door"))
            await asyncio.sleep(0.05)
            write(sensors, json.dumps({"gpio": {"4": 1}}))  # the door opens: a rising edge
            for _ in range(100):
                if not app.bus.outbound.empty():
                    break
                await asyncio.sleep(0.01)
            write(sensors, json.dumps({"gpio": {"4": 0}}))  # closes: a falling edge, not this rule's
            await asyncio.sleep(0.1)
            app.part("watchers").rules.stop("door")

        run(press())
        assert [m.content for m in _out(app)] == ["door open"] and machine.written(5)[0] == 1
        assert app.part("watchers").store.get("door")["state"]["fired"] == 1 and app.bus.inbound.empty()
    finally:
        _done(app)
        remove_tree(top)


def test_watch_check_says_what_the_rule_would_do_and_runs_nothing():
    top = tempdir("rdry")
    app = _rules_app(top, degrees=31)
    try:
        watcher = app.part("watchers").add("heat", "temperature", 1, "x", OWNER_CHAT, "operator", HEAT)
        before = machine.written(5)  # (level, ticks_us) of its last write, if any: a write now changes it
        said = run(app.part("watchers").dry_run(watcher))
        assert said == 'reading 31: would run gpio_write {"pin": 5, "value": 1}; say "hot: {value} C at {name}"'
        assert machine.written(5) == before and 5 not in app.outputs  # no pin driven ...
        assert watcher["state"]["fired"] == 0 and _out(app) == []  # ... nothing fired, nothing said
        assert rule_schema.describe(watcher["rule"]) == (
            'when above 28 (again once below 26): gpio_write {"pin": 5, "value": 1}; say "hot: {value} C at '
            '{name}" | otherwise: gpio_write {"pin": 5, "value": 0}')
    finally:
        _done(app)
        remove_tree(top)


def test_the_rule_engine_is_loaded_only_once_a_rule_exists_and_rules_have_their_own_room():
    top = tempdir("rlazy")
    with NotImported("mimi.watch.rules", "mimi.watch.rule_schema"):
        app = _rules_app(top)
        try:
            app.part("watchers").add("model", "temperature", 60, "tell me when hot", OWNER_CHAT, "owner")
            assert not imported("mimi.watch.rules") and app.part("watchers").rules is None
            for i in range(WATCHERS_MAX - 1):
                app.part("watchers").add("m{}".format(i), "temperature", 60, "x", OWNER_CHAT, "owner")
            for i in range(RULES_MAX):  # the model's eight are full; rules have room of their own
                app.part("watchers").add("r{}".format(i), "temperature", 1, "x", OWNER_CHAT, "owner", HEAT)
            assert imported("mimi.watch.rules") and app.part("watchers").rules is not None
            assert "16 watchers with a local rule" in str(raises(
                WatchError, app.part("watchers").add, "r99", "temperature", 1, "x", OWNER_CHAT, "owner", HEAT))
            assert "8 watchers judged by the model" in str(raises(
                WatchError, app.part("watchers").add, "m99", "temperature", 60, "x", OWNER_CHAT, "owner"))
        finally:
            _done(app)
            remove_tree(top)


def test_a_rule_is_set_replaced_and_taken_away_on_the_console():
    top = tempdir("rcon")
    app = _rules_app(top)
    try:
        lines = []
        import mimi.platform as platform

        saved, platform.console_write = platform.console_write, lines.append
        try:
            commands = app.console.commands
            run(commands.execute("watch_add heat temperature 60 tell me when it is hot"))
            run(commands.execute('watch_rule heat {"when": {"above": 28}, "do": [{"say": "hot"}]}'))
            run(commands.execute('watch_rule heat {"when": {"above": 28}}'))
            run(commands.execute("watch_list"))
            run(commands.execute("watch_rule heat off"))
        finally:
            platform.console_write = saved
        text = "".join(lines)
        assert 'rule set: heat' in text and 'rule: when above 28: say "hot"  [never fired]' in text
        assert "error: rule.do: missing" in text and "rule removed: heat" in text
        assert "rule" not in app.part("watchers").store.get("heat")
    finally:
        _done(app)
        remove_tree(top)


def test_debounce_ms_is_taken_for_a_pin_edge_and_refused_elsewhere_naming_the_field():
    top = tempdir("rbounce")
    app = _rules_app(top)
    try:
        typed = _typed(app, "watch_add door gpio:4:change 0 the door",
                       'watch_rule door {"debounce_ms": 200, "do": [{"say": "door {value}"}]}',
                       'watch_rule door {"debounce_ms": 20000, "do": [{"say": "door"}]}',
                       "watch_add heat temperature 5 the heat",
                       'watch_rule heat {"when": {"above": 28}, "do": [{"say": "hot"}], "debounce_ms": 200}')
        assert "rule set: door" in typed and 'rule: at each event: say "door {value}" | edges 200 ms apart' in typed
        assert "error: rule.debounce_ms: milliseconds from 0 to 10000" in typed
        assert "error: rule.debounce_ms: only a pin edge (gpio:<pin>:rising, falling or change) is debounced; " \
               "leave it out for this source" in typed
        assert "rule" not in app.part("watchers").store.get("heat")
        assert app.part("watchers").store.get("door")["rule"]["debounce_ms"] == 200  # the refused change kept nothing

        async def bounce():  # a switch bouncing: edges 20 ms apart are one, one 300 ms later is another
            app.part("watchers").rules.start(app.part("watchers").store.get("door"))
            for level, pause in ((1, 0.02), (0, 0.02), (1, 0.3), (0, 0.05)):
                machine.edge(4, level)
                await asyncio.sleep(pause)
            app.part("watchers").rules.stop("door")

        run(bounce())
        assert [m.content for m in _out(app)] == ["door 1", "door 0"]
    finally:
        _done(app)
        remove_tree(top)


def test_watch_check_asks_the_engines_own_decision_cooldown_and_pause_included():
    top = tempdir("rcool")
    app = _rules_app(top, degrees=29)
    sensors = top + "/sensors.json"
    try:
        rule = {"when": {"above": 28}, "do": [{"say": "hot: {value} C"}], "cooldown_s": 600}
        watcher = app.part("watchers").add("heat", "temperature", 1, "x", OWNER_CHAT, "owner", rule)
        assert run(app.part("watchers").dry_run(watcher)) == 'reading 29: would run say "hot: {value} C"'
        assert run(app.part("watchers").tick(watcher)) == "fired"
        assert run(app.part("watchers").dry_run(watcher)) == "reading 29: nothing to do (already fired)"
        _temperature(sensors, 25)
        assert run(app.part("watchers").dry_run(watcher)) == "reading 25: would run nothing, and re-arm"
        assert run(app.part("watchers").tick(watcher)) == "rearmed"
        _temperature(sensors, 30)  # over again within the cooldown: the engine holds it, and watch_check says so
        said = run(app.part("watchers").dry_run(watcher))
        assert said.startswith('reading 30: would run say "hot: {value} C", but not now: cooling down for ')
        assert said.endswith(" s more (cooldown_s 600)") and 590 < int(said.split("for ")[1].split(" ")[0]) <= 600
        assert run(app.part("watchers").tick(watcher)) == "cooling down"
        watcher["state"]["at"] -= 600  # ten minutes later
        assert run(app.part("watchers").dry_run(watcher)) == 'reading 30: would run say "hot: {value} C"'
        app.part("watchers").pause("heat")
        assert run(app.part("watchers").dry_run(watcher)) == ('reading 30: would run say "hot: {value} C", but not now: '
                                                      "the rule is paused (watch_resume heat)")
        assert [m.content for m in _out(app)] == ["hot: 29 C"]
    finally:
        _done(app)
        remove_tree(top)


def test_the_cooldown_holds_a_firing_never_the_way_back():
    top = tempdir("rback")
    app = _rules_app(top, degrees=29)
    sensors = top + "/sensors.json"
    try:
        heat = dict(HEAT, cooldown_s=600)
        watcher = app.part("watchers").add("heat", "temperature", 1, "x", OWNER_CHAT, "owner", heat)
        assert run(app.part("watchers").tick(watcher)) == "fired" and machine.written(5)[0] == 1
        _temperature(sensors, 25)  # down again within the cooldown: the fan goes off all the same
        assert run(app.part("watchers").dry_run(watcher)) == 'reading 25: would run gpio_write {"pin": 5, "value": 0}'
        assert run(app.part("watchers").tick(watcher)) == "fired" and machine.written(5)[0] == 0
        _temperature(sensors, 29)  # a firing of `do` is what the cooldown holds
        assert run(app.part("watchers").tick(watcher)) == "cooling down" and machine.written(5)[0] == 0
        door = {"when": {"equals": 1}, "do": [FAN_ON], "otherwise": [FAN_OFF], "cooldown_s": 600}
        edge = app.part("watchers").add("door", "gpio:4:change", 0, "x", OWNER_CHAT, "owner", door)
        outcomes = [run(app.part("watchers").rules.event(edge, level)) for level in (1, 0, 1)]  # the pin's edges
        assert outcomes == ["fired", "fired", "cooling down"] and machine.written(5)[0] == 0
    finally:
        _done(app)
        remove_tree(top)


def _marked(marker):
    """The lines after `<!-- <marker>` up to the next section (## ...), from README.md or the page of docs/
    that holds it (read a line at a time: the README is bigger than the unit tests' heap spares)."""
    import os

    root = _firmware_root() + "/.."
    pages = ["README.md"] + ["docs/" + n for n in sorted(os.listdir(root + "/docs")) if n.endswith(".md")]
    for page in pages:
        found = None
        with open(root + "/" + page) as f:
            for line in f:
                if found is None and line.startswith("<!-- " + marker):
                    found = []
                elif found is not None and line.startswith("## "):
                    break
                elif found is not None:
                    found.append(line.rstrip("\n"))
        if found is not None:
            return found
    raise AssertionError("no page marks " + marker)


def test_the_rule_fields_documented_and_told_to_the_model_are_the_schemas():
    from mimi.watch.rule_schema import ACTIONS_MAX, CONDITIONS, DEBOUNCE_MS, FIELDS, PLACES, RULE_MAX

    lines = _marked("rule fields")  # kept as lines: a page of 7 KB needs a hole the unit heap may not have
    names, rows = [], {}
    for line in lines[2:]:  # under the head and its |---| line
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        names.append(cells[0].strip("`"))
        rows[names[-1]] = cells[1]
    assert names == list(FIELDS)  # every field, in the schema's order, and no other
    assert [part.split('"')[0] for part in rows["when"].split('{"')[1:]] == list(CONDITIONS)
    assert "(at most {})".format(ACTIONS_MAX) in rows["do"]
    assert "pin edges only" in rows["debounce_ms"] and "(default {})".format(DEBOUNCE_MS) in rows["debounce_ms"]
    filled = "with {} and `{}` filled".format(", ".join("`{}`".format(p) for p in PLACES[:-1]), PLACES[-1])
    most = "a rule is at most {},{:03d} bytes".format(RULE_MAX // 1000, RULE_MAX % 1000)
    assert [line for line in lines if filled in line] and [line for line in lines if most in line], (filled, most)
    from mimi.tools.watch_tools import WatchAdd  # and what the model is told when it writes a rule

    told = WatchAdd.schema["properties"]["rule"]["description"]
    assert [field for field in FIELDS if field not in told] == []
    assert "Conditions: {};".format(", ".join(CONDITIONS)) in WatchAdd.description


def test_checks_reject_what_no_rule_can_be():
    raises(RuleError, rule_schema.check, [], "temperature", lambda n, d: None)
    assert str(raises(RuleError, rule_schema.check, {"when": {"above": 1}, "do": [{"say": ""}]}, "temperature",
                      lambda n, d: None)).startswith("rule.do[0].say: needs a text")
    long_say = {"when": {"above": 1}, "do": [{"say": "x" * 400}] * 4}
    assert "longer than" in str(raises(RuleError, rule_schema.check, long_say, "temperature", lambda n, d: None))


def test_a_rules_hourly_count_is_three_numbers_that_slide_with_the_hour():
    from mimi.watch.rules import FireWindow

    window, start = FireWindow(), 1800000000
    assert all(window.take(start + i, 60) for i in range(60)) and not window.take(start + 60, 60)
    # half an hour into the next hour, half of the hour before's 60 firings still count
    assert sum(window.take(start + 5400, 60) for _ in range(40)) == 30
    assert window.take(start + 4 * 3600, 1)  # two hours of silence: a fresh start
    assert window.take(start, 1)  # the clock put back (NTP): a fresh start, never a rule stuck paused
