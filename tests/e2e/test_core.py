# The core product from the outside: console chat, streaming, sessions, restarts, errors, secrets.
import json
import re
import time

import pytest

from host_sim.fake_anthropic import cut, error, stream_error, text
from tests.e2e.conftest import API_KEY
from tests.runtimes import RUNTIMES_WITH_ROMFS


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    """Both runtimes, and the ROMFS form at the heap of BENCHMARKS.md (tests/runtimes.py)."""
    return RUNTIMES_WITH_ROMFS[request.param]


# An owner's tool that tells whether the tools' boot code (tools/loading.py) is still held: its module, and
# (where the runtime can list the heap's objects) any function of it.
LOADED_CODE = '''
import gc
import sys

name = "loaded_code"
description = "Tell whether the tools' boot code is still loaded."
schema = {"type": "object", "properties": {}}


def run(input):
    gc.collect()
    held = "mimi.tools.loading" in sys.modules or hasattr(sys.modules["mimi.tools"], "loading")
    try:
        functions = [f for f in gc.get_objects() if type(f) is type(run) and f.__module__ == "mimi.tools.loading"]
    except AttributeError:  # MicroPython cannot list them (the ROMFS heap measurement shows them)
        functions = ()
    return "module held: {}, functions held: {}".format(held, len(functions))
'''


def _session_lines(flash, name="cli_console"):
    path = flash / "data" / "sessions" / (name + ".jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _system_text(body):
    return "".join(block["text"] for block in body["system"])


def _user_texts(request):
    out = []
    for message in request["body"]["messages"]:
        content = message["content"]
        if isinstance(content, list):
            content = content[-1]["text"]
        out.append((message["role"], content))
    return out


def test_chat_streams_the_reply_and_saves_both_lines(device, fake, flash):
    reply = "Hello! I am Mimi, living on a tiny chip."
    fake.script(text(reply, chunk=4, delay=0.15))
    device.send("chat hi there")
    first = device.expect(r"mimi: Hello")  # the first pieces show while the rest is still streaming
    assert reply not in device.output
    device.pos = first.start()
    device.expect("mimi: " + re.escape(reply), timeout=30)
    device.expect("mimi> ")
    lines = _session_lines(flash)
    assert [(line["role"], line["content"]) for line in lines] == [("user", "hi there"), ("assistant", reply)]
    assert all(isinstance(line["ts"], int) and line["ts"] > 1700000000 for line in lines)
    body = fake.requests[-1]["body"]
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-5"
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}  # caches the whole prefix
    assert "Mimi" in body["system"][0]["text"]  # the SOUL written on first boot


def test_next_turn_sends_history_and_a_byte_identical_system_prompt(device, fake):
    fake.script(text("First answer."), text("Second answer."))
    device.command("chat one")
    device.command("chat two")
    first, second = fake.wait_requests(2)
    assert _user_texts(second) == [("user", "one"), ("assistant", "First answer."), ("user", "two")]
    assert json.dumps(first["body"]["system"]) == json.dumps(second["body"]["system"])
    # The current time rides in the user turn, never in the system prompt.
    assert "[context]" in second["body"]["messages"][-1]["content"][0]["text"]
    assert "UTC" not in _system_text(second["body"])


def test_restart_keeps_config_memory_and_sessions(boot, fake, flash):
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    dev.command("set_model claude-haiku-4-5")
    dev.command('memory_write "The owner likes tea."')
    fake.script(text("Noted."))
    dev.command("chat remember tea")
    dev.send("restart")
    dev.expect("--- reset ---")
    dev.expect("mimi> ")
    fake.script(text("You like tea."))
    dev.command("chat what do I like?")
    dev.stop()
    again = boot()  # a power cycle: a new process on the same flash
    fake.script(text("Still tea."))
    out = again.command("chat and now?")
    assert "Still tea." in out
    last = fake.wait_requests(3)[-1]["body"]
    assert last["model"] == "claude-haiku-4-5"
    assert "The owner likes tea." in _system_text(last)
    assert _user_texts({"body": last})[:4] == [
        ("user", "remember tea"), ("assistant", "Noted."),
        ("user", "what do I like?"), ("assistant", "You like tea."),
    ]


def test_torn_and_corrupt_session_lines_are_skipped(device, fake, flash):
    sessions = flash / "data" / "sessions"
    good = [json.dumps({"role": "user", "content": "old question", "ts": 1}),
            json.dumps({"role": "assistant", "content": "old answer", "ts": 2})]
    torn = '{"role":"user","content":"half a li'
    (sessions / "cli_console.jsonl").write_text("\n".join([good[0], "garbage{{", good[1], torn]))
    fake.script(text("Fine."))
    assert "Fine." in device.command("chat still there?")
    request = fake.wait_requests(1)[-1]
    assert _user_texts(request) == [("user", "old question"), ("assistant", "old answer"), ("user", "still there?")]


def test_api_failures_reach_the_user_as_clear_messages(device, fake):
    fake.script(error(401))
    assert "API key was refused" in device.command("chat a")
    fake.script(error(404, message="model: nope"))
    assert "was not found" in device.command("chat b")
    fake.script(error(529), error(529), error(529), error(529))
    assert "overloaded" in device.command("chat c", timeout=60)
    fake.script(stream_error("Partial ans", type="overloaded_error"))
    out = device.command("chat d")
    assert "Partial ans" in out and "error: Claude is overloaded" in out
    fake.script(cut("Half a rep"))
    assert "broke before the reply was complete" in device.command("chat e")


def test_rate_limit_is_retried_after_retry_after(device, fake):
    fake.script(error(429, retry_after=1), text("Made it."))
    started = time.monotonic()
    out = device.command("chat patience", timeout=30)
    assert "Made it." in out
    assert time.monotonic() - started >= 1.0  # retry-after was honoured
    statuses = [r["status"] for r in fake.wait_requests(2)]
    assert statuses == [429, 200]


def test_client_errors_are_not_retried(device, fake):
    fake.script(error(400, message="messages: bad"), text("never sent"))
    assert "rejected the request (400)" in device.command("chat x")
    assert len(fake.wait_requests(1)) == 1 and fake.pending == 1


def test_secrets_never_appear_in_console_output(device, fake, flash):
    device.command("wifi_set homenet 'hunter2-wifi-pass'")
    device.command("set_tg_token 123456789:AAE-telegram-token-secret-value")
    fake.script(error(401))
    device.command("chat hello")
    for cmd in ("config_show", "status", "wifi_status", "help"):
        device.command(cmd)
    out = device.output
    for secret in (API_KEY, "hunter2-wifi-pass", "telegram-token-secret"):
        assert secret not in out
    assert "sk-a\u2026TAIL" in out  # masked, yet recognisable


def test_console_says_what_is_missing_and_guides(boot):
    dev = boot()
    out = dev.output + dev.command("chat hello")
    assert "set_api_key" in out
    assert "No Anthropic API key is set" in out
    assert "unknown command 'flurb'" in dev.command("flurb")
    assert "usage: wifi_set <ssid> <password>" in dev.command("wifi_set onlyone")
    assert "usage: set_api_key <key>" in dev.command("set_api_key")


def test_memory_and_session_commands(device, fake, flash):
    device.command('memory_write "Birthday: 3 May"')
    assert "Birthday: 3 May" in device.command("memory_read")
    fake.script(text("ok"))
    device.command("chat x")
    assert "cli_console" in device.command("session_list")
    assert "cleared 1" in device.command("session_clear console")
    assert not (flash / "data" / "sessions" / "cli_console.jsonl").exists()


def test_the_tools_boot_code_is_let_go_and_the_owners_tools_and_built_ins_work(boot, flash):
    tools = flash / "tools"
    tools.mkdir(parents=True)
    (tools / "tool_loaded_code.py").write_text(LOADED_CODE)
    dev = boot()
    assert "module held: False, functions held: 0" in dev.command("tool_exec loaded_code")  # the owner's tool
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", dev.command("tool_exec get_current_time"))  # built-in
    listing = dev.command("tool_list")
    assert "  loaded_code  Tell whether" in listing and "  get_current_time  Get the current date" in listing
    assert "warning" not in listing
