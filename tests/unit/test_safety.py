# Safety: circuit breakers on repeated acting tool calls, and the masked, bounded audit log.
import asyncio
import json
import os

import esp32
from mimi import platform
from mimi.settings import Config
from mimi.safety import audit as audit_module
from mimi.safety.audit import Audit, masked
from mimi.safety.audit_read import describe, tail
from mimi.safety.breaker import Breaker
from mimi.safety.call_key import call_key, canonical
from mimi.tools.loading import load_builtins
from mimi.tools.registry import Registry
from mimi.tools.turn import Turn, console
from support import NotImported, imported, read, remove_tree, run, tempdir, write

MINUTE_MS = 60 * 1000
TOKEN = "sk-ant-api03-SECRETSECRETSECRET-wxyz"


class Clock:
    def __init__(self, now=1000):
        self.now = now

    def __call__(self):
        return self.now


class Switch:
    """An acting tool that counts its runs."""

    name = "switch_light"
    description = "Turns the light on or off."
    schema = {"type": "object", "properties": {"on": {"type": "boolean"}, "room": {"type": "string"}}}
    acting = True

    def __init__(self):
        self.runs = 0

    def run(self, input):
        self.runs += 1
        return "done"


class Look:
    name = "look"
    description = "Looks around."
    schema = {"type": "object", "properties": {}}

    def run(self, input):
        return "a room"


def _setup(**settings):
    esp32.set_flash_dir(None)
    config = Config()
    for key in settings:
        config.override("safety_config", key, settings[key])
    clock, told = Clock(), []
    breaker = Breaker(config, clock, told.append)
    registry = Registry()
    switch = Switch()
    registry.add(switch)
    registry.add(Look())
    registry.guards.append(breaker)
    return registry, switch, clock, told


def _call(registry, name, data, turn=None):
    return run(registry.execute(name, data, turn or console()))


def test_the_fourth_identical_acting_call_in_the_window_is_refused_and_the_owner_told_once():
    registry, switch, clock, told = _setup()
    for _ in range(3):
        assert _call(registry, "switch_light", {"on": True, "room": "hall"}) == ("done", False)
        clock.now += MINUTE_MS
    text, is_error = _call(registry, "switch_light", {"room": "hall", "on": True})  # same call, other key order
    assert is_error and text == ("circuit breaker open for switch_light: the same call ran 3 times in 10 minutes; "
                                 "it closes after 30 quiet minutes")
    assert _call(registry, "switch_light", {"on": True, "room": "hall"})[1] is True
    assert switch.runs == 3
    assert len(told) == 1 and "circuit breaker opened for switch_light" in told[0]


def test_different_arguments_read_only_tools_and_spread_out_calls_do_not_open_it():
    registry, switch, clock, told = _setup()
    for room in ("hall", "kitchen", "attic", "cellar", "porch"):
        assert _call(registry, "switch_light", {"on": True, "room": room}) == ("done", False)
    for _ in range(6):
        assert _call(registry, "look", {}) == ("a room", False)
    for _ in range(6):  # every 4 minutes: never more than 3 inside 10 minutes
        assert _call(registry, "switch_light", {"on": False}) == ("done", False)
        clock.now += 4 * MINUTE_MS
    assert told == [] and switch.runs == 11


def test_it_closes_after_the_quiet_period_and_attempts_keep_it_open():
    registry, switch, clock, told = _setup()
    data = {"on": True}
    for _ in range(4):
        _call(registry, "switch_light", data)
    clock.now += 20 * MINUTE_MS
    assert _call(registry, "switch_light", data)[1] is True  # an attempt restarts the quiet period
    clock.now += 29 * MINUTE_MS
    assert _call(registry, "switch_light", data)[1] is True
    clock.now += 30 * MINUTE_MS
    assert _call(registry, "switch_light", data) == ("done", False)
    assert switch.runs == 4


def test_settings_are_respected():
    registry, switch, clock, told = _setup(calls="1", window_s="60", quiet_s="120")
    assert _call(registry, "switch_light", {}) == ("done", False)
    text, is_error = _call(registry, "switch_light", {})
    assert is_error and "ran 1 times in 1 minutes; it closes after 2 quiet minutes" in text
    clock.now += 2 * MINUTE_MS
    assert _call(registry, "switch_light", {}) == ("done", False)
    clock.now += 61 * 1000  # outside the 60 s window: counting starts again
    assert _call(registry, "switch_light", {}) == ("done", False)


def test_the_counting_code_is_loaded_at_the_first_acting_call():
    with NotImported("mimi.safety.call_key"):
        registry, switch, clock, told = _setup()
        assert _call(registry, "look", {}) == ("a room", False)  # a read-only tool is never counted
        assert not imported("mimi.safety.call_key")
        assert _call(registry, "switch_light", {"on": True}) == ("done", False)
        assert imported("mimi.safety.call_key")


def test_built_in_acting_tools_are_known_by_their_definitions():
    esp32.set_flash_dir(None)
    breaker, tools = Breaker(Config(), Clock(), [].append), Registry()
    load_builtins(tools)
    write_file, read_file = tools.tools["write_file"], tools.tools["read_file"]
    refusals = [breaker.admit("write_file", {"path": "a", "content": "b"}, write_file, console()) for _ in range(4)]
    assert refusals[:3] == [None, None, None] and "write_file" in refusals[3]
    assert [breaker.admit("read_file", {"path": "a"}, read_file, console()) for _ in range(5)] == [None] * 5


class Refuser:
    """An approver (like the role policy) that refuses every call."""

    async def approve(self, name, data, tool, turn):
        return "{} was not run: it needs the owner role".format(name)


def test_calls_the_approvers_refuse_never_count_towards_a_breaker():
    registry, switch, clock, told = _setup()
    registry.approvers.append(Refuser())
    for _ in range(6):
        text, is_error = _call(registry, "switch_light", {"on": True})
        assert is_error and text.endswith("it needs the owner role")  # the role's reason, not the breaker's
    registry.approvers.pop()
    for _ in range(3):
        assert _call(registry, "switch_light", {"on": True}) == ("done", False)
    assert told == [] and switch.runs == 3
    assert "circuit breaker open" in _call(registry, "switch_light", {"on": True})[0]


class Pauser:
    """An approver that lets every call through after a pause (as a confirmation would)."""

    async def approve(self, name, data, tool, turn):
        await asyncio.sleep(0)
        return None


def test_identical_calls_approved_at_once_are_counted_as_each_is_let_through():
    registry, switch, clock, told = _setup()
    registry.approvers.append(Pauser())  # all five pass the first check before any is counted
    calls = [registry.execute("switch_light", {"on": True}, console()) for _ in range(5)]

    async def together():
        return await asyncio.gather(*calls)

    results = run(together())
    assert [is_error for _, is_error in results].count(False) == 3 and switch.runs == 3
    assert len(told) == 1


def test_canonical_text_ignores_key_order_but_not_values():
    assert canonical({"b": [1, {"y": 2, "x": "é"}], "a": None}) == canonical({"a": None, "b": [1, {"x": "é", "y": 2}]})
    assert call_key("t", {"a": 1, "b": 2}) == call_key("t", {"b": 2, "a": 1})
    assert call_key("t", {"a": 1}) != call_key("t", {"a": 2})
    assert call_key("t", {"a": 1}) != call_key("u", {"a": 1})


def _audit(root, clock):
    return Audit(root, lambda: [TOKEN], clock)


def test_each_call_is_one_masked_line_in_the_day_file():
    root = tempdir("audit")
    try:
        day = 1795000000  # 2026-11-18
        turn = Turn("telegram", "42", {"user_id": 7}, "operator")
        log = _audit(root, Clock(day))
        registry = Registry()
        registry.add(Switch())
        registry.guards.append(log)
        _call(registry, "switch_light", {"on": True, "room": "my key is " + TOKEN}, turn)
        _call(registry, "switch_light", {"on": "yes"}, turn)
        log.after("login", {"api_token": "abc123", "user": "bob", "nested": [{"password": "pw"}]}, "ok", False, 5,
                  turn)
        path = root + "/audit/" + platform.utc_date(day) + ".jsonl"
        text = read(path)
        assert TOKEN not in text and "abc123" not in text and '"pw"' not in text
        first, second, third = [json.loads(line) for line in text.splitlines()]
        assert first["channel"] == "telegram" and first["chat"] == "42" and first["user"] == 7
        assert first["tool"] == "switch_light" and first["ok"] is True and first["result"] == "done"
        assert first["ts"] == day and isinstance(first["ms"], int)
        assert first["input"]["room"] == "my key is sk-a\u2026wxyz"
        assert second["ok"] is False and "must be of type boolean" in second["result"]
        assert third["input"] == {"api_token": "****", "user": "bob", "nested": [{"password": "****"}]}
    finally:
        remove_tree(root)


def test_old_day_files_are_removed_and_a_full_day_stops_logging():
    root = tempdir("audit")
    try:
        clock = Clock(1795000000)
        log = _audit(root, clock)
        for _ in range(audit_module.AUDIT_DAYS + 3):
            log.after("look", {}, "a room", False, 1, console())
            clock.now += 86400
        names = log.day_files()
        assert len(names) == audit_module.AUDIT_DAYS
        assert names[-1] == platform.utc_date(clock.now - 86400) + ".jsonl"
        assert names[0] == platform.utc_date(clock.now - 86400 * audit_module.AUDIT_DAYS) + ".jsonl"
        clock.now -= 86400
        path = root + "/audit/" + names[-1]
        with open(path, "w") as f:  # fill the day's file to 10 bytes short of the cap, in pieces
            piece = "x" * 1024
            for _ in range(audit_module.FILE_MAX // 1024 - 1):
                f.write(piece)
            f.write("x" * (1024 - 11) + "\n")
        log.after("look", {}, "a room", False, 1, console())
        assert os.stat(path)[6] == audit_module.FILE_MAX - 10  # nothing appended
    finally:
        remove_tree(root)


def test_a_failing_flash_never_fails_the_call():
    root = tempdir("audit")
    try:
        write(root + "/audit", "a file where the folder should be")
        registry = Registry()
        registry.add(Look())
        registry.guards.append(_audit(root, Clock(1795000000)))
        assert _call(registry, "look", {}) == ("a room", False)
    finally:
        remove_tree(root)


def test_tail_returns_the_newest_entries_across_days_and_describe_masks():
    root = tempdir("audit")
    try:
        clock = Clock(1795000000)
        log = _audit(root, clock)
        for i in range(3):
            log.after("look", {"n": i}, "a room", False, 1, console())
        clock.now += 86400
        for i in range(3, 5):
            log.after("look", {"n": i}, "a room", False, 1, console())
        write(root + "/audit/" + platform.utc_date(clock.now) + ".jsonl", "{broken\n", "a")
        assert [e["input"]["n"] for e in tail(log, 4)] == [1, 2, 3, 4]
        assert [e["input"]["n"] for e in tail(log)] == [0, 1, 2, 3, 4]
        assert tail(log, 0) == []
        line = describe({"ts": clock.now, "channel": "telegram", "chat": "42", "user": 7, "tool": "send",
                         "input": {"text": TOKEN}, "ok": False, "ms": 12, "result": "sent\n" + TOKEN}, [TOKEN])
        assert TOKEN not in line and "telegram:42 user 7 send FAILED 12 ms" in line and "\n" not in line
    finally:
        remove_tree(root)


def test_masked_leaves_ordinary_values_alone():
    data = {"path": "notes.md", "count": 3, "keys": ["a"], "flag": True}
    assert masked(data, [TOKEN]) == {"path": "notes.md", "count": 3, "keys": "****", "flag": True}
