# The serial console as a new user types at it: prose verbatim, quoting, suggestions, history.
import json
import re

from websockets.sync.client import connect

from host_sim.fake_anthropic import text
from tests.e2e.conftest import API_KEY
from tests.e2e.device import PROMPT


def _said(request):
    """What the user typed, as the model received it (the [context] line is a block of its own)."""
    return request["body"]["messages"][-1]["content"][-1]["text"]


def test_prose_reaches_the_agent_and_memory_verbatim(device, fake, flash):
    fake.script(text("Sunny."), text("Noted."))
    assert "mimi: Sunny." in device.command("chat what's the weather in Paris?")
    assert _said(fake.requests[-1]) == "what's the weather in Paris?"
    device.command('chat   she said "hi" & left #2 o\'clock   ')
    assert _said(fake.requests[-1]) == 'she said "hi" & left #2 o\'clock'
    out = device.command("memory_write I'm Bob")
    assert "MEMORY.md replaced" in out and "error" not in out
    assert (flash / "data" / "memory" / "MEMORY.md").read_text() == "I'm Bob\n"
    assert "I'm Bob" in device.command("memory_read")
    lines = (flash / "data" / "sessions" / "cli_console.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["content"] == "what's the weather in Paris?"


def test_quoted_arguments_and_usage_hints_still_work(device, flash):
    out = device.command('wifi_set "My Home" "pass word"')
    assert "saved for 'My Home'" in out and "pass word" not in out
    assert "wifi_config.ssid = My Home" in device.command("config_show")
    assert "usage: chat <text>" in device.command("chat")
    assert "usage: memory_write <text>" in device.command('memory_write ""')
    assert "error: unclosed quote" in device.command('wifi_set "My Home pass')
    device.command('memory_write "Quoted as a whole: quotes dropped"')
    assert (flash / "data" / "memory" / "MEMORY.md").read_text() == "Quoted as a whole: quotes dropped\n"


def test_unknown_commands_suggest_the_nearest(device):
    assert "unknown command 'helpp'; did you mean help?" in device.command("helpp")
    assert "did you mean status?" in device.command("stauts")
    assert "did you mean wifi_set or wifi_status?" in device.command("wifi")
    assert "type help for the list, or chat <text> to talk to the agent" in device.command("hello there")
    key_alone = device.command("sk-ant-api03-pasted-by-mistake-000000000000")
    assert "unknown command;" in key_alone and "pasted" not in key_alone


def test_up_arrow_recalls_the_last_line_and_secrets_are_not_kept(device, fake):
    fake.script(text("One."), text("Two."), text("Three."))
    device.command("chat say one")
    out = device.command("\x1b[A")  # Up, then Enter: the same line again
    assert "mimi: Two." in out
    assert _said(fake.requests[-1]) == "say one"
    device.command("set_api_key " + API_KEY)
    device.command("\x1b[A\x7f\x7f\x7ftwo")  # Up recalls the chat line, never the key
    assert _said(fake.requests[-1]) == "say two"


def test_a_services_line_never_lands_inside_a_streaming_reply(device, fake):
    # A web client connects while the console's reply streams: the gateway's line gets a line of its own and
    # the reply goes on below it, shown once.
    port = device.cmd[device.cmd.index("--ws-port") + 1]
    token = re.search(r"gateway token: (\S+)", device.command("ws_token")).group(1)
    device.pos = 0
    device.expect(r"gateway: web chat on http://\S+:{}/".format(port))
    reply = "The sensor seems to be offline, or its cable is loose."
    fake.script(text(reply, 4, 0.25))  # four characters every quarter second
    start = len(device.output)
    device.pos = start
    device.send("chat how warm is it?")
    device.expect(r"mimi: \S", timeout=20)  # the reply has begun
    with connect("ws://127.0.0.1:{}/ws?token={}".format(port, token), open_timeout=10):
        device.expect(r"gateway: client connected as ws_\d+", timeout=10)
    device.expect(re.escape(PROMPT), timeout=30)
    lines = device.output[start:].splitlines()
    assert any(line.startswith("gateway: client connected as ws_") for line in lines)
    assert not any("mimi:" in line and "gateway:" in line for line in lines)
    shown = "".join(line[len("mimi: "):] for line in lines if line.startswith("mimi: "))
    assert shown == reply  # all of it, once, in order: each "mimi:" line holds the pieces as they came
