# The first hour as a new user meets it (issue 43), from the console under both runtimes: every secret shown by
# one rule, the console's help and settings grouped, who answers named, and the demo brain's manners.
import ast
import contextlib
import json
import pathlib
import re
import urllib.request

from host_sim.fake_anthropic import FakeAnthropic, text
from tests.e2e.conftest import API_KEY
from tests.e2e.device import PROMPT

ROOT = pathlib.Path(__file__).resolve().parents[2]

LITELLM_KEY = "sk-litellm-0123456WXYZ"  # 22 characters, as a LiteLLM proxy's key


def test_every_key_is_shown_by_one_rule_on_every_surface(device):
    assert "profile lan added" in device.command(
        "llm_add lan openai http://127.0.0.1:4000/v1 qwen2.5:7b " + LITELLM_KEY)
    listed = device.command("llm_list")
    assert "sk-l\u2026WXYZ" in listed and "sk-a\u2026" in listed  # both keys in the same shape
    assert LITELLM_KEY not in listed and API_KEY not in listed and "****" not in listed
    shown = device.command("config_show")
    assert "sk-l\u2026WXYZ" in shown and LITELLM_KEY not in shown and API_KEY not in shown
    assert "key removed" in device.command("llm_key lan off")
    assert "profile lan: key sk-l\u2026WXYZ (saved; in effect now)" in device.command("llm_key lan " + LITELLM_KEY)


def test_status_names_the_profile_that_answers_when_the_demo_brain_does_not(boot):
    dev = boot("--model", "offline-demo")  # as make sim runs its demo
    assert "the offline demo brain (make sim without ANTHROPIC_API_KEY" in dev.command("status")
    assert "; it answers" in dev.command("status")
    dev.command("llm_add lan openai http://127.0.0.1:4000/v1 qwen2.5:7b")
    dev.command("llm_use lan,claude")
    shown = dev.command("status")
    assert "; profile lan answers first (the chain below)" in shown and "it answers" not in shown
    assert "Models: chain lan" in shown


def test_help_answers_by_group_and_by_command(device):
    listed = device.command("help")
    assert "Commands by group (help <group> or help <command> tells more):" in listed
    assert len(listed.splitlines()) < 40  # groups of names, not ninety lines
    assert "  models    budget_fallback llm_add" in listed and "  mqtt      mqtt_allow" in listed
    models = device.command("help llm")  # the group of llm_*, by any of its words
    assert models.startswith("Claude and other models:\n") and "  llm_use <name>[,<name>...]" in models
    assert device.command("help models") == models
    assert device.command("help set_api_key").strip() == "set_api_key <key>  save the Anthropic API key"
    assert "no command or group 'wifi_sett'; did you mean wifi_set?" in device.command("help wifi_sett")


def test_config_show_groups_its_settings_as_the_web_app_does(device):
    shown = device.command("config_show")
    headings = [line for line in shown.splitlines() if not line.startswith(" ")]
    assert headings[:3] == ["WiFi (wifi):", "Telegram (telegram):", "Models (models):"]
    assert "MQTT and Home Assistant (mqtt):" in headings and "Board (board):" in headings
    mqtt = device.command("config_show mqtt")
    assert mqtt.startswith("MQTT and Home Assistant (mqtt):\n  mqtt_config.host = ")
    assert all(line.startswith("  mqtt_config.") for line in mqtt.splitlines()[1:])
    assert device.command("config_show wifi_config").startswith("WiFi (wifi):\n")
    assert "no settings group 'nope'; the groups: wifi, telegram, models" in device.command("config_show nope")


def test_tool_list_cuts_a_description_at_a_word(device):
    described = {line.split()[0]: line.split("  ", 2)[2] for line in device.command("tool_list").splitlines()
                 if line.startswith("  ") and not line.startswith("  warning")}
    assert len(described) > 10 and all(len(text) <= 90 for text in described.values())
    whole = _descriptions()
    cut = [name for name, text in described.items() if text.endswith("\u2026") and name in whole]
    assert cut, "no description long enough to be cut"
    for name in cut:
        shown = described[name][:-1]
        assert whole[name].startswith(shown) and whole[name][len(shown)] in " ,;:(", (shown, whole[name])


def _descriptions():
    """The built-in tools' descriptions, their first lines, as firmware/mimi/tools/builtin_defs.py has them."""
    source = (ROOT / "firmware" / "mimi" / "tools" / "builtin_defs.py").read_text()
    found = {}
    for literal in re.findall(r"^\s*(b'\{\"name\".*\}')$", source, re.M):
        definition = json.loads(ast.literal_eval(literal))
        found[definition["name"]] = definition["description"].split("\n")[0]
    return found


def test_a_console_line_over_1024_bytes_is_not_run_cut_and_says_so(device, fake):
    out = device.command("chat " + "word " * 300)  # 1,505 bytes
    assert "error: that line was longer than 1024 bytes (481 more were lost), so it was not run" in out
    assert "web chat or Telegram" in out and fake.requests == []
    fake.script(text("Fine."))
    assert "mimi: Fine." in device.command("chat " + "word " * 200)  # 1,005 bytes: taken whole
    assert ("word " * 200).strip() in json.dumps(fake.requests[-1]["body"]["messages"][-1])


def test_a_firmware_line_never_splits_a_streamed_reply(device, fake):
    port = int(device.cmd[device.cmd.index("--ws-port") + 1])
    reply = "The tool get_current_time answered: it is late, and the board's clock says so too."
    fake.script(text(reply, chunk=4, delay=0.1))  # about 2 s of streaming, in pieces that cut words
    start = len(device.output)
    device.send("chat what time is it?")
    device.expect("mimi: The")
    request = urllib.request.Request("http://127.0.0.1:{}/".format(port), headers={"Host": "elsewhere.example"})
    with contextlib.suppress(OSError):  # an HTTP error, or the connection closed: either way refused
        urllib.request.urlopen(request, timeout=10)  # the board logs a line while the reply streams
    device.expect(re.escape(PROMPT), timeout=30)
    shown = device.output[start:]
    assert "mimi: {}\ngateway: refused a request for a name that is not the board's (Host)\n".format(reply) in shown


def test_a_setting_the_simulator_s_command_line_gave_changes_when_the_console_says_so(boot, fake):
    other = FakeAnthropic(api_key=API_KEY)
    other.start()
    try:
        dev = boot("--model", "offline-demo")  # as make sim: the URL and the model from its command line
        dev.command("set_api_key " + API_KEY)
        said = dev.command("set_llm_api " + other.url)
        assert "llm_config.api_base = {} (saved; in effect now)".format(other.url) in said
        assert "key" in said.split("in effect now)", 1)[1]  # another host: the key stayed behind (issue 41)
        dev.command("set_api_key " + API_KEY)
        other.script(text("From the other server."))
        assert "From the other server." in dev.command("chat hello", timeout=30)
        assert len(other.requests) == 1 and fake.requests == []
        assert other.requests[0]["body"]["model"] == "offline-demo"  # the model still the command line's
        assert "profile claude saved: {} claude-haiku-4-5".format(other.url) in dev.command(
            "llm_add claude anthropic {} claude-haiku-4-5".format(other.url))
        assert "claude: anthropic {} claude-haiku-4-5, key sk-a\u2026".format(other.url) in dev.command("llm_list")
        dev.send("restart")  # a restart of the same run: the console's values still stand
        dev.expect("--- reset ---")
        dev.ready()
        other.script(text("Still the other one."))
        assert "Still the other one." in dev.command("chat again", timeout=30)
        assert other.requests[-1]["body"]["model"] == "claude-haiku-4-5" and fake.requests == []
    finally:
        other.stop()
