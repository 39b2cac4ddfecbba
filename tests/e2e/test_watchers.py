# Watchers from the outside: a scripted reading is judged, the notice reaches the chat, an action is pushed
# and capped, WATCH_OK stays silent, the watch model is used, and the watcher survives a restart; a tool source
# is a tool call like any other (audited, refused once the owner blocks the tool).
import json
import re
import time

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY
from tests.e2e.conftest import TG_TOKEN as TOKEN

OWNER = 42

WATCH_MODEL = "claude-watch-small-test"
SAID = r"(?:notice|mimi): "  # how the console shows a message pushed to it


def _user_text(request):
    content = request["body"]["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content) if isinstance(content, list) else content


def _results(request):
    return [(b["content"], b["is_error"]) for b in request["body"]["messages"][-1]["content"]
            if b.get("type") == "tool_result"]


def _chat(tg, chat):
    """What the bot said in a chat; a watcher's actions come in its own message, never also as a report."""
    return [m["shown"] for m in tg.sent(chat)]


def _sensors(tmp_path, millivolts):
    path = tmp_path / "sensors.json"
    path.write_text(json.dumps({"adc": {"4": millivolts}}))
    return path


def test_a_watcher_notifies_acts_within_its_cap_stays_silent_and_survives_a_restart(boot, fake, tmp_path):
    sensors = _sensors(tmp_path, 2400)
    dev = boot(env={"MIMI_SIM_SENSORS": str(sensors)})
    for line in ("set_api_key " + API_KEY, "gpio_allow 4", "gpio_allow 5", "set_watch_model " + WATCH_MODEL,
                 "config_set safety_config.watch_acts_hour 2"):
        dev.command(line)

    # 1. The first reading comes a few seconds after watch_add; the model's notice reaches the console.
    fake.script(text("The soil sensor reads 2.4 V: the greenhouse is too wet."))
    out = dev.command("watch_add soil adc:4 3600 tell me if the sensor is above 2 V; switch GPIO 5 off if so")
    assert "watching: soil  every 3600 s  adc:4  -> cli:console" in out
    dev.expect(SAID + r"\[watcher soil\] The soil sensor reads 2.4 V: the greenhouse is too wet.", timeout=20)
    first = fake.wait_requests(1)[0]
    assert first["body"]["model"] == WATCH_MODEL
    said = _user_text(first)
    assert "tell me if the sensor is above 2 V" in said and '"millivolts": 2400' in said and "WATCH_OK" in said

    # 2. WATCH_OK: nothing reaches the chat, and the verdict is in the next turn's history.
    sensors.write_text(json.dumps({"adc": {"4": 1200}}))
    fake.script(text("WATCH_OK"))
    mark = len(dev.output)
    assert "reading sent to the agent" in dev.command("watch_check soil")
    assert '"millivolts": 1200' in _user_text(fake.wait_requests(2)[1])
    time.sleep(1)
    assert "WATCH_OK" not in dev.output[mark:] and "[watcher" not in dev.output[mark:]

    # 3. An action: gpio_write runs and is pushed to the chat even though the model then says WATCH_OK.
    fake.script(tool_use("gpio_write", {"pin": 5, "value": 1}), text("WATCH_OK"))
    dev.command("watch_check soil")
    dev.expect(SAID + r'\[watcher soil\]\s*\nActions:\n- gpio_write \{"pin": 5, "value": 1\}: done', timeout=20)
    third = fake.wait_requests(4)
    assert "-> WATCH_OK" in _user_text(third[2])  # the quiet verdict of step 2 is in the history
    assert _results(third[3]) == [('{"pin": 5, "value": 1}', False)]
    assert "I ran gpio_write" not in dev.output  # listed once, in the watcher's message, not also reported

    # 4. Over the cap (2 actions per hour: the notice and the write), the next write is refused, the owner told.
    fake.script(tool_use("gpio_write", {"pin": 5, "value": 0}), text("I could not switch it."))
    dev.command("watch_check soil")
    dev.expect(r"notice: watchers reached their cap of 2 actions per hour", timeout=20)
    dev.expect(SAID + r"\[watcher soil\] I could not switch it.\nActions:\n- gpio_write .*NOT done: gpio_write was "
               r"not run: watchers may act 2 times per hour", timeout=20)
    refused = _results(fake.wait_requests(6)[5])
    assert refused[0][1] is True and "watchers may act 2 times per hour" in refused[0][0]
    assert '"value": 1' in dev.command("tool_exec gpio_read '{\"pin\": 5}'")  # the refused write did not happen

    # 5. A restart: the watcher comes back from watchers.json with its history, and still works.
    dev.restart()
    listed = dev.command("watch_list")
    assert "soil  every 3600 s  adc:4  -> cli:console" in listed
    assert "judged by claude ({}, set_watch_model): the chain's first".format(WATCH_MODEL) in listed
    assert "last: " in listed and "acted: gpio_write (not done)" in listed
    fake.script(text("Still too wet after the restart."))
    dev.command("watch_check soil")
    dev.expect(SAID + r"\[watcher soil\] Still too wet after the restart.", timeout=20)
    assert fake.wait_requests(7)[6]["body"]["model"] == WATCH_MODEL
    assert "removed watcher soil" in dev.command("watch_remove soil")
    assert "no watchers" in dev.command("watch_list")


def test_a_watcher_added_on_telegram_ticks_on_its_own_over_a_json_field(boot, fake, tg, web, flash):  # noqa: F811
    web.page("/greenhouse.json", json.dumps({"sensors": [{"temp_c": 3.5}]}), "application/json")
    dev = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow {}".format(OWNER),
                 "config_set tg_config.roles {}=owner".format(OWNER)):
        dev.command(line)
    source = web.url + "/greenhouse.json#sensors.0.temp_c"
    fake.script(
        tool_use("watch_add", {"name": "greenhouse", "source": source, "interval_s": 10,
                               "instruction": "tell me if the greenhouse drops below 5 C"}),
        text("I'm watching the greenhouse."),
        text("The greenhouse is at 3.5 C, below 5 C."),
    )
    tg.user_message(OWNER, "watch the greenhouse every 10 s and tell me if it drops below 5 C")
    assert tg.wait_for(lambda: len(_chat(tg, OWNER)) >= 3, 40)
    said = _chat(tg, OWNER)
    assert said[0].startswith("\u2139\ufe0f I ran watch_add")  # watch_add reports itself (owner tier)
    assert said[1:] == ["I'm watching the greenhouse.",
                        "[watcher greenhouse] The greenhouse is at 3.5 C, below 5 C."]
    assert "Reading now: 3.5" in _user_text(fake.wait_requests(3)[2])
    saved = json.loads((flash / "data" / "watchers.json").read_text())["watchers"][0]
    assert saved["channel"] == "telegram" and saved["chat_id"] == str(OWNER) and saved["role"] == "owner"

    # The next tick comes by itself one interval later; WATCH_OK sends nothing to Telegram.
    web.page("/greenhouse.json", json.dumps({"sensors": [{"temp_c": 7.0}]}), "application/json")
    fake.script(text("WATCH_OK"))
    fourth = fake.wait_requests(4, timeout=30)
    assert len(fourth) == 4 and "Reading now: 7.0" in _user_text(fourth[3])
    # Timed between the two readings themselves: the first one's turn may take a slow machine a while to answer.
    first, second = web.requests_to("/greenhouse.json")[:2]
    assert 5 < second["time"] - first["time"] < 20
    time.sleep(1)
    assert len(_chat(tg, OWNER)) == 3
    assert len(web.requests_to("/greenhouse.json")) == 2
    assert TOKEN not in dev.output


def test_a_tool_source_is_read_through_the_registry_audited_and_refused_once_the_owner_blocks_it(boot, fake):
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    fake.script(text("WATCH_OK"))
    assert "watching: board  every 3600 s  tool:system_info" in dev.command(
        "watch_add board tool:system_info 3600 tell me if the free heap falls under 100000 bytes")
    first = fake.wait_requests(1, timeout=30)[0]  # its first reading comes a few seconds after watch_add
    assert '"firmware": "MimiClaw-Py' in _user_text(first)
    assert re.search(r"cli:console system_info ok \d+ ms \{\} -> \{", dev.command("audit_tail 1"))
    dev.command("tool_policy system_info blocked")
    blocked = ("a watcher cannot read system_info: system_info is blocked on this device (tool_policy system_info "
               "<level> unblocks it)")
    out = dev.command("watch_check board")
    assert "watch: board could not read tool:system_info: " + blocked in out
    assert "watch board: the source could not be read" in out
    assert "error: " + blocked in dev.command("watch_add board2 tool:system_info 60 x")
    assert "board2" not in dev.command("watch_list") and len(fake.requests) == 1
    assert len(re.findall("system_info", dev.command("audit_tail 5"))) == 1  # the refused reading never ran
