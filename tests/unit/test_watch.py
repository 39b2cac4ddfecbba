# Watchers: the store on flash, reading sources, the judging turn, silence, pushed actions and the caps.
import asyncio
import json

import machine
from stub_app import NormalBoot, RecordingChannel, stub_app
from support import raises, read, remove_tree, run, tempdir, write

from mimi import platform
from mimi.bus.message import Message
from mimi.tools import turn as turns
from mimi.tools.loading import load_builtins
from mimi.tools.registry import Registry
from mimi.watch import setup as watch_setup
from mimi.watch import sources
from mimi.watch.service import FAILS_BEFORE_NOTICE, WATCH_OK, is_watch_ok
from mimi.watch.sources import SourceError
from mimi.watch.store import HISTORY_MAX, INTERVAL_MIN_S, WATCHERS_MAX, Store, WatchError

OWNER_CHAT = ("telegram", "42")


class _Channel(RecordingChannel):
    """Records the text of what a channel is asked to send."""

    async def send(self, message):
        self.sent.append(message.content)


class _Owner:
    def __init__(self):
        self.told = []

    def tell(self, text):
        self.told.append(text)


def _app(sensors=None):
    machine.use_sensors(sensors)
    app = stub_app("watch", _Channel, parts=True)
    app.started_ms = platform.ticks_ms()
    app.owner = _Owner()
    app.registry = Registry(app)
    watch_setup(app)
    load_builtins(app.registry, ["mimi.tools.gpio", "mimi.tools.system", "mimi.tools.watch_tools"])
    app.config.set("tool_config", "gpio_allow", "4,5")
    app.part("watchers")  # the service these tests drive (made at the first watcher otherwise)
    return app


def _done(app):
    machine.use_sensors(None)
    remove_tree(app.top)


def _sensors(top, readings):
    path = top + "/sensors.json"
    write(path, json.dumps(readings))
    return path


def _turn(app):
    return app.bus.inbound.get_nowait()


async def _answer(app, turn, text, calls=(), kind="reply"):
    """What the agent does with a watcher turn: run its tool calls, then send its reply to the system channel."""
    served = turns.of(app.config, turn.channel, turn.chat_id, turn.meta)  # as the agent makes it
    results = []
    for name, data in calls:
        results.append(await app.registry.execute(name, data, served))
    await app.channels["system"].send(Message("system", turn.chat_id, text, {"kind": kind, "request": turn.meta}))
    return results


# --- the store ---------------------------------------------------------------------------------


def test_store_validates_bounds_and_survives_a_reload():
    top = tempdir("wstore")
    try:
        store = Store(top)
        store.add("greenhouse", "adc:4", 60, "tell me below 5 C", "cli", "console", "owner")
        for bad, why in ((("bad name!", "adc:4", 60, "x"), "letters, digits"), (("g2", "adc:4", 0, "x"), "interval"),
                         (("g2", "adc:4", 60, "  "), "instruction"), (("greenhouse", "adc:4", 60, "x"), "exists")):
            exc = raises(WatchError, store.add, *(bad + ("cli", "console", "owner")))
            assert why in str(exc), str(exc)
        for i in range(WATCHERS_MAX - 1):
            store.add("w{}".format(i), "temperature", INTERVAL_MIN_S, "x", "cli", "console", "owner")
        assert "the most allowed" in str(raises(WatchError, store.add, "one-more", "temperature", 60, "x",
                                                 "cli", "console", "owner"))
        watcher = store.get("greenhouse")
        for i in range(HISTORY_MAX + 3):
            store.record(watcher, 1000 + i, "reading {}".format(i), "WATCH_OK", True)
        store.set_paused("greenhouse", True)
        again = Store(top)
        kept = again.get("greenhouse")
        assert kept["paused"] and kept["instruction"] == "tell me below 5 C"
        assert [h["reading"] for h in kept["history"]] == ["reading {}".format(i) for i in range(3, HISTORY_MAX + 3)]
        again.remove("greenhouse")
        assert "no watcher named 'greenhouse'" in str(raises(WatchError, Store(top).get, "greenhouse"))
    finally:
        remove_tree(top)


def test_a_torn_file_starts_empty_and_is_kept_aside():
    top = tempdir("wtorn")
    try:
        write(top + "/watchers.json", '{"watchers": [{"name": "g", "sour')
        store = Store(top)
        assert store.watchers == []
        assert read(top + "/watchers.json.bad").startswith('{"watchers"')
        store.add("g", "temperature", 60, "x", "cli", "console", "owner")
        assert [w["name"] for w in Store(top).watchers] == ["g"]
        write(top + "/watchers.json", json.dumps({"watchers": [{"name": "only-a-name"}, "junk"]}))
        assert Store(top).watchers == []  # entries missing fields are dropped, nothing crashes
    finally:
        remove_tree(top)


# --- sources -----------------------------------------------------------------------------------


def test_sources_parse_and_check_what_they_may_read():
    app = _app()
    try:
        assert sources.parse("http:https://example.com/a.json#x.0.t")["path"] == ["x", "0", "t"]
        assert sources.parse('tool:get_current_time{"tz": "UTC"}')["input"] == {"tz": "UTC"}
        for bad, why in (("moon", "unknown source"), ("adc:x", "pin number"), ("tool:x{oops", "not valid JSON"),
                         ("gpio:6", "not allowed"), ("gpio:20", "reserved"), ("adc:12", "ADC1"),
                         ("tool:gpio_write", "changes things"), ("tool:nope", "no tool named"),
                         ("ftp://x/y", "unknown source")):
            exc = raises(SourceError, sources.check, app, bad, "owner")
            assert why in str(exc), (bad, str(exc))
        assert sources.check(app, "adc:4", "owner") == "adc:4"
    finally:
        _done(app)


def _read(app, source):
    return run(sources.read(app, source, sources.turn_of({"name": "g", "channel": "telegram", "chat_id": "42",
                                                          "role": "owner"})))


def test_readings_come_from_pins_temperature_tools_and_json_fields():
    top = tempdir("wsense")
    app = _app(_sensors(top, {"adc": {"4": 1550}, "gpio": {"5": 1}, "temperature": 37}))
    try:
        adc = json.loads(_read(app, "adc:4"))
        assert adc["pin"] == 4 and adc["millivolts"] == 1550 and 32000 < adc["raw_u16"] < 33000
        assert json.loads(_read(app, "gpio:5")) == {"pin": 5, "value": 1, "mode": "input"}
        assert json.loads(_read(app, "temperature")) == {"chip_temperature_c": 37}
        assert json.loads(_read(app, "tool:system_info"))["firmware"].startswith("MimiClaw-Py")
        assert sources.field({"s": [{"t": 4.5}]}, ["s", "0", "t"]) == 4.5
        assert "no field 's.1'" in str(raises(SourceError, sources.field, {"s": [1]}, ["s", "1", "t"]))
        app.config.set("tool_config", "gpio_allow", "5")  # the owner takes pin 4 back: no more readings
        assert "not allowed" in str(raises(SourceError, _read, app, "adc:4"))
    finally:
        _done(app)
        remove_tree(top)


def _guarded_app(sensors=None):
    """The app with the safety layer every tool call goes through on the board: roles and levels, the circuit
    breaker and the audit log."""
    from mimi.safety import audit, breaker, policy

    app = _app(sensors)
    policy.setup(app)
    breaker.setup(app)
    app.audit = audit.setup(app)
    return app


def _audited(app):
    from mimi.safety.audit_read import tail

    return [(e["channel"], e["chat"], e["tool"], e["ok"]) for e in tail(app.audit, 20)]


class _Slow:
    """An owner's read-only tool that answers after a while; the registry gives it timeout_s."""

    name, description, timeout_s = "slow_sensor", "a sensor that answers slowly", 0.2
    schema = {"type": "object", "properties": {}}

    async def run(self, data):
        await asyncio.sleep(2)
        return {"value": 1}


def test_a_tool_source_is_a_registry_call_of_the_watchers_turn_audited_and_timed_out():
    app = _guarded_app()
    try:
        watcher = app.part("watchers").add("board", "tool:system_info", 60, "tell me if the heap runs low", OWNER_CHAT,
                                   "owner")
        assert run(app.part("watchers").tick(watcher)) == "queued"
        assert '"firmware": "MimiClaw-Py' in _turn(app).content
        assert _audited(app) == [("telegram", "42", "system_info", True)]  # in the watcher's chat, like a chat's
        app.registry.add(_Slow(), "test")
        slow = app.part("watchers").add("slow", "tool:slow_sensor", 60, "x", OWNER_CHAT, "owner")
        assert run(app.part("watchers").tick(slow)) == "unreadable"  # the registry's timeout, the tool's own 0.2 s
        assert slow["history"][-1]["reading"] == "unreadable: slow_sensor timed out after 0.2 s"
        assert _audited(app)[-1] == ("telegram", "42", "slow_sensor", False) and app.bus.inbound.empty()
    finally:
        _done(app)


def test_a_tool_the_policy_blocks_is_refused_as_a_source_when_added_and_when_read():
    from mimi.safety import policy

    app = _guarded_app()
    lines = []
    try:
        tools = app.registry.tools
        policy.set_level(app.config, "system_info", "blocked", tools["system_info"])
        blocked = ("a watcher cannot read system_info: system_info is blocked on this device (tool_policy "
                   "system_info <level> unblocks it)")
        assert str(raises(SourceError, app.part("watchers").add, "board", "tool:system_info", 60, "x", OWNER_CHAT,
                          "owner")) == blocked
        policy.set_level(app.config, "system_info", "confirm", tools["system_info"])
        assert "system_info is set to confirm (tool_policy): nobody is there to press Approve when a watcher " \
               "reads it" in str(raises(SourceError, app.part("watchers").add, "board", "tool:system_info", 60, "x",
                                        OWNER_CHAT, "owner"))
        assert str(raises(SourceError, app.part("watchers").add, "pin", 'tool:gpio_read{"pin": 4}', 60, "x", OWNER_CHAT,
                          "observer")) == ("a watcher cannot read gpio_read: gpio_read needs the operator role and "
                                           "this watcher acts as observer")
        assert app.part("watchers").watchers() == []  # nothing refused was kept
        policy.set_level(app.config, "system_info", "autonomous", tools["system_info"])
        watcher = app.part("watchers").add("board", "tool:system_info", 60, "x", OWNER_CHAT, "owner")
        policy.set_level(app.config, "system_info", "blocked", tools["system_info"])  # blocked later: not read
        platform.log_to(lines.append)
        assert run(app.part("watchers").tick(watcher)) == "unreadable"
        assert lines == ["watch: board could not read tool:system_info: " + blocked]
        assert watcher["history"][-1]["reading"] == "unreadable: " + blocked
        assert _audited(app) == [] and app.bus.inbound.empty()  # never run, never judged
    finally:
        platform.log_to(print)
        _done(app)


# --- the service -------------------------------------------------------------------------------


def test_a_tick_queues_one_judging_turn_for_the_watchers_chat():
    top = tempdir("wturn")
    app = _app(_sensors(top, {"adc": {"4": 2500}}))
    try:
        app.config.set("llm_config", "watch_model", "claude-haiku-small")
        watcher = app.part("watchers").add("greenhouse", "adc:4", 60, "tell me above 2 V", OWNER_CHAT, "operator")
        assert run(app.part("watchers").tick(watcher)) == "queued"
        turn = _turn(app)
        assert turn.channel == "system" and turn.chat_id == "telegram:42"
        assert turn.meta["watcher"] == "greenhouse" and turn.meta["model"] == "claude-haiku-small"
        assert turn.meta["role"] == "operator" and turn.meta["session"] is None
        assert "tell me above 2 V" in turn.content and '"millivolts": 2500' in turn.content
        assert WATCH_OK in turn.content and "(no earlier readings)" in turn.content
        assert run(app.part("watchers").tick(watcher)) == "busy"  # one reading judged at a time
        run(_answer(app, turn, "WATCH_OK"))
        assert app.channels["telegram"].sent == []  # silence
        run(app.part("watchers").tick(watcher))
        assert "-> WATCH_OK" in _turn(app).content  # the history reaches the next turn
    finally:
        _done(app)
        remove_tree(top)


def test_a_notice_and_an_action_reach_the_chat_and_other_system_turns_pass_through():
    app = _app()
    try:
        watcher = app.part("watchers").add("heat", "temperature", 60, "switch GPIO 4 on above 35 C", OWNER_CHAT, "owner")
        run(app.part("watchers").tick(watcher))
        run(_answer(app, _turn(app), "The chip is at 41 C."))
        run(app.part("watchers").tick(watcher))
        results = run(_answer(app, _turn(app), "WATCH_OK", [("gpio_write", {"pin": 4, "value": 1}),
                                                           ("gpio_read", {"pin": 4})]))
        assert results[0] == ('{"pin": 4, "value": 1}', False)
        sent = app.channels["telegram"].sent
        assert sent[0] == "[watcher heat] The chip is at 41 C."
        assert sent[1] == '[watcher heat]\nActions:\n- gpio_write {"pin": 4, "value": 1}: done'  # reads not listed
        verdicts = [h["verdict"] for h in app.part("watchers").store.get("heat")["history"]]
        assert verdicts == ["told: The chip is at 41 C.", "WATCH_OK; acted: gpio_write (done)"]
        request = {"target": ("cli", "console")}
        cron_turn = Message("system", "cli:console", "Reminder!", {"kind": "reply", "request": request})
        run(app.channels["system"].send(cron_turn))
        assert app.channels["cli"].sent == ["Reminder!"]
    finally:
        _done(app)


def test_over_the_hourly_cap_actions_are_refused_and_the_owner_told_once():
    app = _app()
    try:
        app.config.set("safety_config", "watch_acts_hour", "2")
        clock = [0]
        app.part("watchers").limits.acts.clock = lambda: clock[0]
        watcher = app.part("watchers").add("relay", "temperature", 60, "toggle GPIO 4", OWNER_CHAT, "owner")
        run(app.part("watchers").tick(watcher))
        calls = [("gpio_write", {"pin": 4, "value": v}) for v in (1, 0, 1)]
        results = run(_answer(app, _turn(app), "Toggled.", calls))
        assert [r[1] for r in results] == [False, False, True]
        assert "watchers may act 2 times per hour" in results[2][0]
        pushed = app.channels["telegram"].sent[-1]
        assert pushed.startswith("[watcher relay] Toggled.\nActions:\n")
        assert "NOT done: gpio_write was not run" in pushed
        run(app.part("watchers").tick(watcher))
        run(_answer(app, _turn(app), "Too hot!"))  # a plain message is an action too: over the cap, not sent
        assert len(app.channels["telegram"].sent) == 1
        assert len(app.owner.told) == 1 and "cap of 2 actions per hour" in app.owner.told[0]
        chat_call = run(app.registry.execute("gpio_write", {"pin": 4, "value": 0}, turns.console()))
        assert chat_call[1] is False  # a chat's call is not capped
        clock[0] = 3600 * 1000  # an hour later the budget is back
        run(app.part("watchers").tick(watcher))
        run(_answer(app, _turn(app), "Too hot!"))
        assert app.channels["telegram"].sent[-1] == "[watcher relay] Too hot!"
    finally:
        _done(app)


def test_evaluations_per_minute_are_capped_across_watchers():
    app = _app()
    try:
        app.config.set("safety_config", "watch_evals_min", "2")
        clock = [0]
        app.part("watchers").limits.evals.clock = lambda: clock[0]
        watchers = [app.part("watchers").add("t{}".format(i), "temperature", 60, "x", OWNER_CHAT, "owner") for i in range(3)]
        assert [run(app.part("watchers").tick(w)) for w in watchers] == ["queued", "queued", "capped"]
        clock[0] = 60 * 1000
        _turn(app), _turn(app)
        assert run(app.part("watchers").tick(watchers[2])) == "queued"
    finally:
        _done(app)


def test_an_unreadable_source_tells_the_chat_after_a_few_ticks_without_an_llm_call():
    app = _app()
    try:
        watcher = app.part("watchers").add("door", "gpio:5", 60, "tell me when the door opens", OWNER_CHAT, "owner")
        app.config.set("tool_config", "gpio_allow", "4")
        for _ in range(FAILS_BEFORE_NOTICE):
            assert run(app.part("watchers").tick(watcher)) == "unreadable"
        assert app.bus.inbound.empty()
        notice = app.bus.outbound.get_nowait()
        assert notice.channel == "telegram" and notice.chat_id == "42"
        assert notice.content.startswith("[watcher door] cannot read its source gpio:5 (3 times in a row): "
                                         "GPIO 5 is not allowed")
        assert app.bus.outbound.empty()
    finally:
        _done(app)


def test_due_ticks_follow_the_interval_and_skip_paused_watchers():
    app = _app()
    try:
        app.part("watchers").add("a", "temperature", 60, "x", OWNER_CHAT, "owner")
        app.part("watchers").add("b", "temperature", 60, "x", OWNER_CHAT, "owner")
        assert app.part("watchers").due() == []  # a new watcher's first tick comes a few seconds later
        for name in ("a", "b"):
            app.part("watchers")._due[name] = 0
        app.part("watchers").pause("b")
        assert [w["name"] for w in app.part("watchers").due()] == ["a"]
        assert app.part("watchers").due() == []  # the next one is an interval away
    finally:
        _done(app)


def test_watch_tools_report_to_the_asking_chat_and_a_watcher_cannot_add_watchers():
    app = _app()
    try:
        tools = app.registry.tools
        assert tools["watch_add"].tier == "owner" and tools["watch_add"].acting
        owner = turns.of(app.config, "telegram", "42", {"role": "owner"})
        added = run(app.registry.execute("watch_add", {"name": "g", "source": "adc:4", "interval_s": 30,
                                                       "instruction": "tell me above 2 V"}, owner))
        assert not added[1] and json.loads(added[0])["reports_to"] == "telegram:42"
        assert app.part("watchers").store.get("g")["role"] == "owner"
        bad = run(app.registry.execute("watch_add", {"name": "h", "source": "adc:9", "interval_s": 30,
                                                     "instruction": "x"}, owner))
        assert bad == ("GPIO 9 is not allowed; the owner allows it with the console command 'gpio_allow 9'", True)
        assert run(app.registry.execute("watch_pause", {"name": "g"}, owner)) == ("paused watcher g", False)
        listed = json.loads(run(app.registry.execute("watch_list", {}, owner))[0])["watchers"]
        assert listed[0]["paused"] is True and listed[0]["source"] == "adc:4"
        in_watcher = turns.of(app.config, "telegram", "42", {"role": "owner", "watcher": "g"})
        nested = run(app.registry.execute("watch_add", {"name": "h", "source": "temperature", "interval_s": 30,
                                                        "instruction": "x"}, in_watcher))
        assert nested == ("a watcher cannot start other watchers", True)
        assert run(app.registry.execute("watch_remove", {"name": "g"}, owner)) == ("removed watcher g", False)
        assert run(app.registry.execute("watch_list", {}, owner)) == ("no watchers", False)
    finally:
        _done(app)


def _typed(app, line):
    """What a console command prints."""
    lines = []
    saved, platform.console_write = platform.console_write, lines.append
    try:
        run(app.console.commands.execute(line))
    finally:
        platform.console_write = saved
    return "".join(lines)


def test_watch_list_says_who_judges_each_watcher_its_rule_or_the_model_asked_first():
    app = _app()
    try:
        app.part("watchers").add("soil", "adc:4", 60, "tell me above 2 V", OWNER_CHAT, "owner")
        app.part("watchers").add("heat", "temperature", 1, "hot", OWNER_CHAT, "owner", {"when": {"above": 28},
                                                                                 "do": [{"say": "hot"}]})
        app.part("watchers").add("fan", "temperature", 5, "the fan", OWNER_CHAT, "owner")  # too often for the model
        listed = _typed(app, "watch_list").split("\n")
        assert listed[:6] == ["  soil  every 60 s  adc:4  -> telegram:42  tell me above 2 V",
                              "      judged by claude (claude-sonnet-4-5): the chain's first",
                              "  heat  every 1 s  temperature  -> telegram:42  hot",
                              '      judged by its rule: when above 28: say "hot"  [never fired]',
                              "  fan  every 5 s  temperature  -> telegram:42  the fan",
                              "      waits for its local rule (the model does not judge it): watch_rule fan <json>"]
        assert listed[6:] == [""]  # nothing after: no line about the model under a rule
        assert _typed(app, "set_watch_model claude-haiku-small") == (
            "watch model claude-haiku-small; the model's watchers are judged by claude (claude-haiku-small, "
            "set_watch_model): the chain's first\n")
        app.config.set("llm_profiles", "p1", "local openai http://192.168.1.20:11434/v1 qwen2.5:7b")
        app.config.set("llm_config", "chain", "local,claude")
        assert "      judged by local (qwen2.5:7b): the chain's first\n" in _typed(app, "watch_list")
        app.config.set("llm_config", "chain", "claude,local")
        app.config.set("llm_config", "for_watcher", "local")
        assert "      judged by local (qwen2.5:7b): llm_for watcher\n" in _typed(app, "watch_list")
        assert _typed(app, "set_watch_model").startswith("watch model unset; the model's watchers are judged by "
                                                         "local (qwen2.5:7b): llm_for watcher")
    finally:
        _done(app)


def test_the_service_is_made_at_the_first_watcher_and_at_boot_once_one_was_saved():
    app = stub_app("wlazy", _Channel, parts=True)  # watchers made at the first need, as on the device
    try:
        app.started_ms, app.owner, app.registry = platform.ticks_ms(), _Owner(), Registry(app)
        assert watch_setup(app) is None  # no watchers.json: nothing made
        load_builtins(app.registry, ["mimi.tools.watch_tools"])
        assert app.watchers is None and app.system.watchers is None and not app.services  # a read makes nothing
        assert not app.registry.guards and not app.registry.approvers
        app.services_started, app.health, app.tasks = True, NormalBoot(), []
        owner = turns.of(app.config, "telegram", "42", {"role": "owner"})

        async def add():
            added = await app.registry.execute("watch_add", {"name": "t", "source": "temperature",
                                                             "interval_s": 60, "instruction": "x"}, owner)
            await asyncio.sleep(0)  # the service's task starts (its first sleep), then stops with the test
            for task in app.tasks:
                task.cancel()
            return added

        added = run(add())
        assert not added[1], added
        watchers = app.watchers
        assert watchers.store.get("t") and app.system.watchers is watchers and len(app.tasks) == 1
        assert app.registry.guards == [watchers.limits] and app.services == [watchers]
        app.watchers = app.system.watchers = None  # a restart on the same flash
        app.services, app.services_started = [], False
        watch_setup(app)
        assert app.watchers.store.get("t") and app.services == [app.watchers]
    finally:
        _done(app)


def test_watch_ok_is_recognised_loosely():
    assert is_watch_ok("WATCH_OK") and is_watch_ok(" **WATCH_OK**.\n") and not is_watch_ok("WATCH_OK, but")
