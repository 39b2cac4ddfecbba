# Local rules from the outside: made by chat or on the console, carried out by the board itself (a pin edge,
# a temperature with hysteresis, an owner's /command), no request to the model between the event and the act;
# kept over a restart without firing twice; refused when they cannot work; paused when they loop.
import json
import re
import time

import pytest

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY
from tests.e2e.conftest import TG_TOKEN as TOKEN
from tests.runtimes import RUNTIMES_WITH_ROMFS, RUNTIMES_WITH_ROMFS_TELEGRAM

FAN_ON = {"tool": "gpio_write", "input": {"pin": 5, "value": 1}}
FAN_OFF = {"tool": "gpio_write", "input": {"pin": 5, "value": 0}}
DOOR = {"do": [FAN_ON, {"say": "door open"}]}
HEAT = {"when": {"above": 28}, "rearm": {"below": 26}, "do": [FAN_ON, {"say": "hot: {value} C"}],
        "otherwise": [FAN_OFF, {"say": "cool again: {value} C"}]}
OPERATOR, OBSERVER = 7, 9


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    return RUNTIMES_WITH_ROMFS[request.param]


def _sensors(tmp_path, readings):
    path = tmp_path / "sensors.json"
    path.write_text(json.dumps(readings))
    return path


def _board(boot, sensors, *extra):
    dev = boot(*extra, env={"MIMI_SIM_SENSORS": str(sensors)})
    for line in ("set_api_key " + API_KEY, "gpio_allow 4", "gpio_allow 5"):
        dev.command(line)
    return dev


def _pin5(dev):
    return json.loads(dev.command("tool_exec gpio_read {\"pin\": 5}").strip().split("\n")[-1])["value"]


def test_a_door_rule_made_by_chat_switches_a_pin_and_says_so_without_the_model(boot, fake, tmp_path):
    sensors = _sensors(tmp_path, {"gpio": {"4": 0}})
    dev = _board(boot, sensors)
    fake.script(tool_use("watch_add", {"name": "door", "source": "gpio:4:rising", "interval_s": 0,
                                       "instruction": "when the door opens, light the porch and tell me",
                                       "rule": DOOR}),
                text("Done: the door switches GPIO 5 on and tells you."))
    assert "Done: the door switches GPIO 5 on" in dev.command("chat when the door opens light the porch", 30)
    assert len(fake.wait_requests(2)) == 2
    listed = dev.command("watch_list")
    assert "door  gpio:4:rising  -> cli:console" in listed
    assert 'rule: at each event: gpio_write {"pin": 5, "value": 1}; say "door open"  [never fired]' in listed
    mark = len(dev.output)
    sensors.write_text(json.dumps({"gpio": {"4": 1}}))  # the door opens: a rising edge on GPIO 4
    dev.expect(r"notice: door open", timeout=10)
    assert _pin5(dev) == 1  # gpio_read of the output shows what the rule wrote
    assert len(fake.requests) == 2  # no request to the model between the edge and the message
    sensors.write_text(json.dumps({"gpio": {"4": 0}}))  # it closes: a falling edge, not this rule's
    time.sleep(0.5)
    assert dev.output[mark:].count("door open") == 1
    assert "fired 1 times" in dev.command("watch_list")


def test_a_temperature_rule_fires_once_per_crossing_and_survives_a_restart_without_firing_twice(
        boot, fake, tmp_path):
    sensors = _sensors(tmp_path, {"temperature": 20})
    dev = _board(boot, sensors)
    assert "watching: heat  every 1 s  temperature" in dev.command(
        "watch_add heat temperature 1 switch the fan with the chip's temperature")
    out = dev.command("watch_rule heat " + json.dumps(HEAT))
    assert "rule set: heat" in out and "when above 28 (again once below 26)" in out
    said = []
    for degrees, expected in ((29, "hot: 29 C"), (27, None), (30, None), (25, "cool again: 25 C"), (29, "hot: 29 C")):
        mark = len(dev.output)
        sensors.write_text(json.dumps({"temperature": degrees}))
        if expected:
            dev.expect(r"notice: " + expected, timeout=10)
        else:
            time.sleep(2.5)  # two readings: nothing to say
        said.append([line for line in dev.output[mark:].split("\n") if line.startswith("notice:")])
    assert [len(s) for s in said] == [1, 0, 0, 1, 1]
    assert _pin5(dev) == 1 and len(fake.requests) == 0  # all of it without a single token
    dev.restart()
    mark = len(dev.output)
    time.sleep(4)  # several readings, still at 29 C: it fired before the restart, so not again
    assert "notice: hot" not in dev.output[mark:]
    assert "fired 3 times" in dev.command("watch_list")
    assert "reading 29: nothing to do (already fired)" in dev.command("watch_check heat")


def test_rules_that_cannot_work_are_refused_with_the_field_and_a_looping_rule_is_paused(boot, fake, tmp_path):
    dev = _board(boot, _sensors(tmp_path, {"temperature": 20}))
    add = 'tool_exec watch_add {{"name": "r", "source": "temperature", "interval_s": 5, "instruction": "x", ' \
          '"rule": {}}}'
    assert "error: rule.do[0]: no tool named 'teleport'" in dev.command(
        add.format(json.dumps({"when": {"above": 1}, "do": [{"tool": "teleport", "input": {}}]})))
    assert "error: rule.when: unknown condition 'hotter'" in dev.command(
        add.format(json.dumps({"when": {"hotter": 1}, "do": [FAN_ON]})))
    dev.command("tool_policy gpio_write confirm")
    assert "error: rule.do[0]: gpio_write is set to confirm (tool_policy): nobody is there to press Approve" in \
        dev.command(add.format(json.dumps({"when": {"above": 1}, "do": [FAN_ON]})))
    assert "no watchers" in dev.command("watch_list")
    # A rule that fires again and again is paused by its hourly cap, and the owner hears it.
    dev.command("config_set safety_config.rule_fires_hour 3")
    dev.command("watch_add ping command:/ping 0 answers ping")
    dev.command('watch_rule ping {"do": [{"say": "pong"}]}')
    for _ in range(3):
        assert "mimi: pong" in dev.command("ping")
    out = dev.command("ping")
    assert "notice: rule ping fired 3 times within an hour (safety_config.rule_fires_hour), so it is paused; " \
           "watch_resume ping starts it again" in out
    assert "mimi: rule ping is paused; watch_resume ping starts it again" in out
    assert "[paused]" in dev.command("watch_list")
    assert len(fake.requests) == 0


def test_debounce_ms_is_a_pin_edges_and_watch_check_says_when_a_rule_cools_down(boot, fake, tmp_path):
    dev = _board(boot, _sensors(tmp_path, {"temperature": 30, "gpio": {"4": 0}}))
    dev.command("watch_add door gpio:4:change 0 the door")
    out = dev.command('watch_rule door {"debounce_ms": 200, "do": [{"say": "door {value}"}]}')
    assert "rule set: door" in out and 'rule: at each event: say "door {value}" | edges 200 ms apart' in out
    dev.command("watch_add heat temperature 1 the heat")
    refused = dev.command('watch_rule heat {"when": {"above": 28}, "do": [{"say": "hot"}], "debounce_ms": 200}')
    assert "error: rule.debounce_ms: only a pin edge (gpio:<pin>:rising, falling or change) is debounced" in refused
    cooling = {"when": {"changes": True}, "do": [{"say": "now {value}"}], "cooldown_s": 600}
    assert "rule set: heat" in dev.command("watch_rule heat " + json.dumps(cooling))
    sensors = tmp_path / "sensors.json"
    # Its first reading (30) comes a few seconds after the rule was set: a change is one from that reading.
    deadline = time.monotonic() + 30
    while "last: 30 -> rule: quiet" not in dev.command("watch_list") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "last: 30 -> rule: quiet" in dev.command("watch_list"), dev.output[-2000:]
    sensors.write_text(json.dumps({"temperature": 32, "gpio": {"4": 0}}))  # a change: it fires, then cools down
    dev.expect(r"notice: now 32", timeout=10)
    sensors.write_text(json.dumps({"temperature": 35, "gpio": {"4": 0}}))
    assert re.search(r"watch heat: reading 35: would run say \"now \{value\}\", but not now: cooling down for "
                     r"\d+ s more \(cooldown_s 600\)", dev.command("watch_check heat"))
    assert dev.output.count("notice: now") == 1 and len(fake.requests) == 0


@pytest.mark.parametrize("runtime", [RUNTIMES_WITH_ROMFS_TELEGRAM[name] for name in
                                     sorted(RUNTIMES_WITH_ROMFS_TELEGRAM)], ids=sorted(RUNTIMES_WITH_ROMFS_TELEGRAM))
def test_an_owner_command_on_telegram_runs_without_the_model_for_the_roles_its_author_has(boot, fake, tg, tmp_path):
    dev = _board(boot, _sensors(tmp_path, {}), "--telegram-api", tg.url)
    for line in ("set_tg_token " + TOKEN, "tg_allow {}".format(OPERATOR), "tg_allow {} observer".format(OBSERVER),
                 "watch_add fan command:/fan 0 the fan, on or off"):
        dev.command(line)
    rule = {"when": {"equals": "on"}, "do": [FAN_ON, {"say": "fan on"}], "otherwise": [FAN_OFF, {"say": "fan off"}]}
    assert "rule set: fan" in dev.command("watch_rule fan " + json.dumps(rule))
    tg.user_message(OPERATOR, "/fan on")
    assert tg.wait_for(lambda: tg.sent(OPERATOR), 15), dev.output[-2000:]
    assert tg.sent(OPERATOR)[0]["shown"] == 'gpio_write: {"pin": 5, "value": 1}\nfan on'
    assert _pin5(dev) == 1 and len(fake.requests) == 0
    tg.user_message(OBSERVER, "/fan off")  # the tool needs an operator: refused, the fan stays on
    assert tg.wait_for(lambda: tg.sent(OBSERVER), 15), dev.output[-2000:]
    refused = tg.sent(OBSERVER)[0]["shown"]
    assert refused.startswith("gpio_write failed: gpio_write was not run: it needs the operator role")
    assert _pin5(dev) == 1 and len(fake.requests) == 0
    tg.user_message(OPERATOR, "/help")
    assert tg.wait_for(lambda: len(tg.sent(OPERATOR)) == 2, 15)
    assert "/fan \u2014 rule fan" in tg.sent(OPERATOR)[1]["shown"]
    assert "fan" in dev.command("help").split("  other ", 1)[1] and "fan [args]" in dev.command("help fan")
