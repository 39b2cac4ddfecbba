# Any model: an openai profile (an OpenAI-compatible server) from the outside, under both runtimes and the ROMFS
# form: a streamed chat, two tool calls in one reply, a confirmation, a photo, a length cut, a mid-stream error,
# failover from claude to a LAN profile, a watcher judged by its own profile, usage split by profile, no key shown.
import asyncio
import base64
import json
import re

import pytest
from websockets.asyncio.client import connect

from host_sim import fake_anthropic
from host_sim.fake_openai import FakeOpenAI, stream_error, text, tool_calls
from tests.e2e.conftest import API_KEY, free_port
from tests.runtimes import RUNTIMES_WITH_ROMFS, RUNTIMES_WITH_ROMFS_TELEGRAM

LOCAL_KEY = "sk-or-v1-local" + "q" * 30 + "LOCALSECRET"
MODEL = "qwen2.5:7b"


# Scenarios whose ROMFS form runs at the Telegram scenarios' heap (tests/runtimes.py, 960K): the bot's code, or
# the web chat's server, loaded beside an openai profile's client (at 864K the web chat found no hole for a
# block of its own once the client was loaded).
_ROOMIER = ("test_a_photo_reaches_an_openai_profile_as_a_data_url",
            "test_with_the_internet_down_the_console_and_the_web_chat_answer_from_the_lan")


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    """Both runtimes and the ROMFS form (at the Telegram scenarios' heap for those of _ROOMIER)."""
    if request.node.originalname in _ROOMIER:
        return RUNTIMES_WITH_ROMFS_TELEGRAM[request.param]
    return RUNTIMES_WITH_ROMFS[request.param]


@pytest.fixture(scope="module")
def lan_server():
    server = FakeOpenAI("ollama", chunk=5)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def lan(lan_server):
    lan_server.reset()
    yield lan_server
    lan_server.reset()


def _local(device, lan, chain="local", key=None):
    out = device.command("llm_add local openai {} {}{}".format(lan.base, MODEL, " " + key if key else ""))
    assert "profile local added" in out, out
    out = device.command("llm_use " + chain)
    assert "chain: " in out, out
    return device


def _reply(device, said, timeout=30):
    """Type chat, wait for the prompt; what the console showed from the reply's first mimi: on."""
    out = device.command("chat " + said, timeout)
    return out[out.index("mimi: ") + len("mimi: "):].rstrip("\n") if "mimi: " in out else out


def test_a_chat_streams_from_an_openai_profile_and_the_history_follows(boot, lan, flash):
    device = _local(boot(), lan)  # no Anthropic key at all: the local model is the assistant
    lan.script(text("Hello from the local model, streamed in pieces."), text("Second answer."))
    assert _reply(device, "hi there") == "Hello from the local model, streamed in pieces."
    assert _reply(device, "and again") == "Second answer."
    body = lan.requests[-1]["body"]
    assert body["model"] == MODEL and body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "max_tokens" in body and "max_completion_tokens" not in body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "Mimi" in body["messages"][0]["content"]  # the system prompt as one string: SOUL on flash
    assert body["messages"][1]["content"] == "hi there"
    assert body["messages"][2]["content"] == "Hello from the local model, streamed in pieces."
    assert body["messages"][-1]["content"][-1] == {"type": "text", "text": "and again"}
    assert "authorization" not in {k.lower() for k in lan.requests[-1]["headers"]}  # no key: none sent


def test_two_tool_calls_in_one_reply_run_and_answer_by_id(boot, lan):
    device = _local(boot(), lan)
    lan.script(tool_calls(("get_current_time", {}), ("system_info", {}), text="Let me look."),
               text("It is noon and all is well."))
    reply = _reply(device, "time and status?")
    assert reply.endswith("It is noon and all is well.")
    first, second = [r["body"] for r in lan.requests[-2:]]
    names = sorted(t["function"]["name"] for t in first["tools"])
    assert "get_current_time" in names and all(t["type"] == "function" for t in first["tools"])
    assert all(t["function"]["parameters"]["type"] == "object" for t in first["tools"])
    assistant = second["messages"][-3]
    assert assistant["role"] == "assistant" and assistant["content"] == "Let me look."
    calls = assistant["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_current_time", "system_info"]
    answers = second["messages"][-2:]
    assert [m["role"] for m in answers] == ["tool", "tool"]
    assert [m["tool_call_id"] for m in answers] == [c["id"] for c in calls]
    assert "UTC" in answers[0]["content"]
    assert "cli:console via local get_current_time ok" in device.command("audit_tail 2")  # which model asked


def test_a_length_cut_says_so_and_a_mid_stream_error_is_one_sentence(boot, lan):
    device = _local(boot(), lan)
    lan.script(text("A long story that", finish="length"))
    assert _reply(device, "tell me").endswith("[reply cut short: it reached the max_tokens limit]")
    lan.script(stream_error("Partial ", "Provider returned error", 502))
    out = device.command("chat again", 60)
    assert "Provider returned error" in out and "Traceback" not in out


def test_no_key_is_ever_shown(boot, lan, flash):
    device = _local(boot(), lan, key=LOCAL_KEY)
    lan.script(text("ok"))
    _reply(device, "hi")
    assert lan.requests[-1]["headers"]["Authorization"] == "Bearer " + LOCAL_KEY
    shown = device.command("llm_list") + device.command("config_show") + device.command("status")
    assert "LOCALSECRET" not in shown and "llm_profiles.k1 = sk-o\u2026CRET" in shown
    assert "LOCALSECRET" not in device.output


def test_failover_from_claude_to_a_lan_profile_marks_the_reply_once(boot, fake, lan):
    device = _local(boot(), lan, chain="claude,local")
    device.command("set_api_key " + API_KEY)
    fake.script(*[fake_anthropic.error(529)] * 4)
    lan.script(text("The local model answers."))
    out = device.command("chat hello", 60)
    assert out.count("The local model answers.") == 1
    assert "\u2014 answered by local (claude overloaded)" in out
    assert len(fake.requests) == 4 and len(lan.requests) == 1  # claude's retries, then local once
    assert "local (qwen2.5:7b); claude overloaded" in device.command("llm_list")


def test_with_the_internet_down_the_console_and_the_web_chat_answer_from_the_lan(boot, lan, flash):
    from tests.e2e.gateway_client import Gateway, hello, listening, say, until_reply

    port = free_port()
    device = boot("--ws-port", str(port), api="http://127.0.0.1:{}".format(free_port()))  # nothing listens there
    listening(device, port)
    _local(device, lan, chain="claude,local")
    device.command("set_api_key " + API_KEY)
    lan.script(text("Still here, on the LAN."), text("The web chat too."))
    out = device.command("chat are you there?", 60)
    assert "Still here, on the LAN." in out and "answered by local (claude unreachable)" in out
    lines = [json.loads(line) for line in (flash / "data" / "sessions" / "cli_console.jsonl").read_text().splitlines()]
    assert lines[-1]["content"] == "Still here, on the LAN."  # the note is shown, not kept
    gateway = Gateway(device, port)

    async def web():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("hello from the web"))
            return await until_reply(ws)

    frames = asyncio.run(web())
    assert frames[-1]["type"] == "response", frames
    assert frames[-1]["content"].startswith("The web chat too.") and "answered by local" in frames[-1]["content"]


def test_a_confirmation_on_the_console_then_the_tool_result_goes_back(boot, lan):
    device = _local(boot(), lan)
    for line in ("gpio_allow 4", "tool_policy gpio_write confirm"):
        device.command(line)
    lan.script(tool_calls(("gpio_write", {"pin": 4, "value": 1})), text("The light is on."))
    device.send("chat light on please")
    device.expect(r'confirm: May I run gpio_write with \{"pin": 4, "value": 1\}\? \[y/n\]', timeout=30)
    assert len(lan.requests) == 1  # nothing ran yet
    device.send("y")
    device.expect(r"mimi: The light is on\.", timeout=30)
    tool = lan.wait_requests(2)[1]["body"]["messages"][-1]
    assert tool["role"] == "tool" and '"value": 1' in tool["content"] and not tool["content"].startswith("[tool")


def test_a_photo_reaches_an_openai_profile_as_a_data_url(owner_bot, tg, lan, flash):
    from host_sim.telegram_files import jpeg_bytes
    from tests.e2e.conftest import OWNER_ID

    device = _local(owner_bot(), lan)
    photo = jpeg_bytes(20 * 1024)
    tg.photo_message(OWNER_ID, [(320, 240, photo)], caption="What plant is this?")
    assert tg.wait_for(lambda: tg.sent(OWNER_ID), 30), device.output[-3000:]
    (request,) = lan.wait_requests(1)
    parts = request["body"]["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,") and base64.b64decode(url.split(",", 1)[1]) == photo
    assert request["status"] == 200  # the fake checked the data URL as the real API does
    assert "[image image/jpeg, {} bytes]".format(len(photo)) in tg.sent(OWNER_ID)[-1]["shown"]


def test_a_watcher_is_judged_by_its_own_profile_and_usage_is_split_by_profile(boot, fake, lan, tmp_path):
    sensors = tmp_path / "sensors.json"
    sensors.write_text(json.dumps({"adc": {"4": 2400}}))
    device = _local(boot(env={"MIMI_SIM_SENSORS": str(sensors)}), lan, chain="claude")
    for line in ("set_api_key " + API_KEY, "gpio_allow 4", "set_watch_model claude-watch-small", "llm_for watcher local"):
        device.command(line)
    fake.script(fake_anthropic.text("Hello from Claude."))
    assert "Hello from Claude." in device.command("chat hi", 30)
    lan.script(text("The soil sensor reads 2.4 V: too wet."))
    device.command("watch_add soil adc:4 3600 tell me if the sensor is above 2 V")
    device.expect(r"\[watcher soil\] The soil sensor reads 2.4 V: too wet.", timeout=30)
    (judged,) = lan.wait_requests(1)
    said = "".join(part["text"] for part in judged["body"]["messages"][-1]["content"])
    assert judged["body"]["model"] == MODEL and '"millivolts": 2400' in said
    assert len(fake.requests) == 1  # claude only for the chat: the watcher's reading went to local
    usage = device.command("usage")
    assert re.search(r"claude \(claude-sonnet-4-5\): input \d+, output \d+", usage), usage
    assert re.search(r"local \(qwen2.5:7b\): input \d+, output \d+, .* about \$0.0000", usage), usage
    assert "plus " in usage and "tokens of free profiles today" in usage


def test_a_refused_key_is_told_once_and_a_long_429_is_not_waited_for(boot, fake, lan):
    device = _local(boot(), lan, chain="claude,local")
    device.command("set_api_key " + API_KEY[:-4] + "XXXX")  # a key the API refuses
    lan.script(text("First."), text("Second."), text("Third."))
    assert "answered by local (claude refused its key)" in device.command("chat one", 60)
    out = device.command("chat two", 60)  # claude rests: not asked again while its key is the same
    assert "answered by local (claude resting 60 s more: refused its key)" in out and len(fake.requests) == 1
    assert device.output.count("The chain's next profile answers meanwhile.") == 1  # the owner told once
    assert "notice: The Anthropic API key was refused (401)" in device.output
    device.command("set_api_key " + API_KEY)  # a new key ends the rest
    fake.script(fake_anthropic.error(429, retry_after=45))
    out = device.command("chat three", 30)
    assert "answered by local (claude rate limited)" in out and len(fake.requests) == 2  # no 45 s wait, no retry


def test_llm_add_to_another_host_drops_the_profiles_key_says_so_and_sends_none_there(boot, lan):
    other = FakeOpenAI("ollama", host="127.0.0.2")  # another host of the loopback network
    other.start()
    try:
        device = _local(boot(), lan, key=LOCAL_KEY)
        lan.script(text("From the first host."))
        assert _reply(device, "hi") == "From the first host."
        assert lan.requests[-1]["headers"]["Authorization"] == "Bearer " + LOCAL_KEY
        out = device.command("llm_add local openai {} {}".format(other.base, MODEL))
        assert "profile local changed: openai {} {}, key none".format(other.base, MODEL) in out, out
        assert "key dropped: the host changed" in out, out
        other.script(text("From the other host."))
        assert _reply(device, "hi again") == "From the other host."
        assert "authorization" not in {k.lower() for k in other.requests[-1]["headers"]}  # the key stayed behind
        assert "LOCALSECRET" not in json.dumps(other.requests) and "LOCALSECRET" not in device.output
        assert "llm_profiles.k1 = (not set)" in device.command("config_show")
    finally:
        other.stop()


def test_a_key_typed_where_the_model_goes_is_refused_in_one_line_and_never_echoed(boot, lan):
    device = boot()
    out = device.command("llm_add typo openai {} {}".format(lan.base, LOCAL_KEY))
    assert out.strip().splitlines()[-1] == "error: the model looks like a key: not saved (the key comes last: " \
                                           "llm_add <name> <anthropic|openai> <url> <model> [key])", out
    assert "profile typo" not in device.command("llm_list")
    shown = device.command("config_show")
    assert "LOCALSECRET" not in shown and "llm_profiles.p1 = (not set)" in shown
    assert "error: the URL opens an IPv6 address with [ and never closes it with ]" in device.command(
        "llm_add e3 openai http://[::1 m")
