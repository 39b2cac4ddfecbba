# Small models, from the outside, under both runtimes and the ROMFS form: a 4,096-token llama.cpp server (which
# refuses a prompt over its window) and a 2,048-token Ollama (which silently cuts one) answer plain and tool turns
# with the default files and with 4 KB of memory, never over their window; a tool found through find_tools and run;
# a Claude model that takes the tool search tool gets every tool deferred, in the shape the fake API checks; a
# window too small for even the message says so in one sentence; a LiteLLM proxy's 400 goes to the next profile,
# which later turns ask at once.
import pytest

from host_sim import fake_anthropic
from host_sim.fake_openai import FakeOpenAI, error, text, tool_calls
from tests.runtimes import RUNTIMES_WITH_ROMFS, RUNTIMES_WITH_ROMFS_TELEGRAM

MODEL = "qwen2.5:3b"
MEMORY = "# Memory\n\nLong-term notes about my owner, one per line.\n" + "".join(
    "- Fact {:03d}: the owner likes item number {} on Tuesdays.\n".format(i, i) for i in range(80))  # about 4 KB


# Scenarios whose ROMFS form runs at the Telegram scenarios' heap (tests/runtimes.py, 960K), as test_models.py's
# roomier ones: a tool turn that loads the cron service's code beside an openai profile's client.
_ROOMIER = ("test_a_4096_token_server_answers_plain_and_tool_turns_within_its_window",)


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    if request.node.originalname in _ROOMIER:
        return RUNTIMES_WITH_ROMFS_TELEGRAM[request.param]
    return RUNTIMES_WITH_ROMFS[request.param]


@pytest.fixture(scope="module")
def llama_server():
    server = FakeOpenAI("llamacpp", chunk=6, window=4096)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def llama(llama_server):
    llama_server.reset()
    yield llama_server
    llama_server.reset()


def _lan(device, server, name="lan", chain=None):
    out = device.command("llm_add {} openai {} {}".format(name, server.base, MODEL))
    assert "window 4096 tokens (default)" in out, out
    assert "chain: " in device.command("llm_use " + (chain or name))
    return device


def _reply(device, said, timeout=30):
    out = device.command("chat " + said, timeout)
    return out[out.index("mimi: ") + len("mimi: "):].rstrip("\n") if "mimi: " in out else out


def _within(server, window):
    """Every request the server took fit its window with its max_tokens (the fake refuses one that does not)."""
    for request in server.requests:
        body = request["body"]
        assert request["status"] == 200, (request["status"], request.get("prompt_tokens"))
        assert request["prompt_tokens"] + body["max_tokens"] <= window


def _memory(flash, text=MEMORY):
    path = flash / "data" / "memory" / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _names(body):
    return sorted(tool["function"]["name"] for tool in body.get("tools") or ())


def test_a_4096_token_server_answers_plain_and_tool_turns_within_its_window(boot, llama, flash):
    device = _lan(boot(), llama)
    assert "\nhello" in _reply(device, "hello")  # the default brain says what it heard
    plain = llama.requests[-1]
    assert _names(plain["body"]) == ["find_tools", "get_current_time", "read_file", "recall", "remember"]
    assert "# SOUL" in plain["body"]["messages"][0]["content"]
    llama.script(tool_calls(("find_tools", {"query": "remind me in two hours"})),
                 tool_calls(("cron_add", {"schedule": "in", "seconds": 7200, "message": "Remind the owner to stretch"})),
                 text("I will remind you in two hours."))
    assert _reply(device, "remind me to stretch in two hours").startswith("I will remind you in two hours.")
    found, ran, last = [r["body"] for r in llama.requests[-3:]]
    assert "cron_add" not in _names(found) and "cron_add" in _names(ran) and "cron_add" in _names(last)
    answer = ran["messages"][-1]
    assert answer["role"] == "tool" and "cron_add" in answer["content"]  # find_tools' answer names it
    assert "Remind the owner to stretch" in device.command("cron_list")  # found, offered, and run
    _within(llama, 4096)
    assert "find_tools" in device.command("audit_tail 3") and "cron_add" in device.command("audit_tail 3")


def test_4_kb_of_memory_and_a_long_chat_still_fit_the_oldest_history_going_first(boot, llama, flash):
    _memory(flash)
    device = _lan(boot(), llama)
    for i in range(8):  # long answers: the history soon outgrows the window
        llama.script(text("Answer {}: ".format(i) + "words " * 150))
        assert _reply(device, "question {}".format(i)).startswith("Answer {}".format(i))
    _within(llama, 4096)
    system = llama.requests[-1]["body"]["messages"][0]
    assert system["role"] == "system" and "Fact 079" in system["content"]  # the memory kept: the history went
    sent = [m for m in llama.requests[-1]["body"]["messages"] if m["role"] == "assistant"]
    assert 0 < len(sent) < 7 and sent[-1]["content"].startswith("Answer 6")  # the newest kept, the oldest gone
    llama.script(tool_calls(("recall", {"query": "Fact 042"})), text("Tuesdays, item 42."))
    assert _reply(device, "what about fact 42?").startswith("Tuesdays, item 42.")
    assert "item number 42" in llama.requests[-1]["body"]["messages"][-1]["content"]
    _within(llama, 4096)


def test_ollama_with_a_2048_token_window_never_loses_the_instructions(boot, flash):
    _memory(flash)
    server = FakeOpenAI("ollama", chunk=6, window=2048)
    server.start()
    try:
        device = _lan(boot(), server)
        assert "window 2048 tokens" in device.command("llm_ctx lan 2048")
        for i in range(4):
            server.script(text("Reply {}: ".format(i) + "more " * 120))
            assert _reply(device, "tell me something {}".format(i)).startswith("Reply {}".format(i))
        for request in server.requests:
            assert request["lost"] == [], request["lost"]  # Ollama never had to cut a thing
            assert request["prompt_tokens"] <= 2048
            assert request["body"]["messages"][0]["role"] == "system"
            assert "# SOUL" in request["body"]["messages"][0]["content"]
    finally:
        server.stop()


def test_a_window_too_small_for_the_message_says_so_in_one_sentence(boot, llama):
    device = _lan(boot(), llama)
    assert "window 1024 tokens" in device.command("llm_ctx lan 1024")
    out = _reply(device, "please read this: " + "long words " * 80)
    assert "does not fit model profile lan's window of 1024 tokens" in out and "llm_ctx lan <tokens>" in out
    assert llama.requests == []  # nothing sent that the server would refuse
    assert "window 4096 tokens (default)" in device.command("llm_ctx lan default")
    assert "Traceback" not in device.output


def test_a_claude_model_with_tool_search_gets_every_tool_deferred_and_replays_the_search(device, fake):
    fake.script(fake_anthropic.tool_search("schedule a reminder", ["cron_add"], calls=[
        ("cron_add", {"schedule": "in", "seconds": 3600, "message": "Remind the owner to water the plants"})]),
        fake_anthropic.text("Done: in an hour."))
    out = device.command("chat remind me to water the plants in an hour", 30)
    assert "Done: in an hour." in out
    first, second = fake.wait_requests(2)
    assert first["status"] == 200 and second["status"] == 200  # the fake checked both shapes as the API does
    assert "advanced-tool-use-2025-11-20" in first["headers"]["anthropic-beta"]
    tools = {tool["name"]: tool for tool in first["body"]["tools"]}
    assert tools["tool_search_tool_bm25"] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert tools["cron_add"]["defer_loading"] is True and "defer_loading" not in tools["remember"]
    assert "find_tools" not in tools and len(tools) > 20
    replayed = second["body"]["messages"][-2]["content"]
    assert [block["type"] for block in replayed] == ["server_tool_use", "tool_search_tool_result", "tool_use"]
    assert "Remind the owner to water the plants" in device.command("cron_list")
    assert first["body"]["tools"] == second["body"]["tools"]  # one prefix: prompt caching still hits


def test_an_older_claude_model_finds_tools_with_find_tools(device, fake):
    device.command("set_model claude-3-5-haiku-20241022")
    fake.script(fake_anthropic.tool_use("find_tools", {"query": "the weather"}), fake_anthropic.text("Found it."))
    assert "Found it." in device.command("chat what tools for the weather?", 30)
    first, second = fake.wait_requests(2)
    device_tools = sorted(t["name"] for t in first["body"]["tools"] if "type" not in t)  # Claude's web search besides
    assert device_tools == ["find_tools", "get_current_time", "read_file", "recall", "remember"]
    assert "get_weather" in [t["name"] for t in second["body"]["tools"]]
    assert "anthropic-beta" not in first["headers"]


def test_a_litellm_proxy_s_400_goes_to_the_next_profile_which_later_turns_ask_at_once(boot, llama):
    proxy = FakeOpenAI("openai", chunk=6)
    proxy.start()
    try:
        device = boot()
        assert "profile proxy added" in device.command("llm_add proxy openai {} gpt-4o-mini sk-wrong-key".format(
            proxy.base))
        _lan(device, llama, chain="proxy,lan")
        proxy.script(error(400, "Authentication Error, No connected db.", kind="auth_error", code="400"))
        out = device.command("chat hello", 30)
        assert "answered by lan (proxy cannot answer)" in out
        assert "No connected db." in device.output  # the log line gives the provider's first line
        asked = len(proxy.requests)
        assert asked == 1  # a 400 is not retried
        out = device.command("chat again", 30)
        assert "answered by lan (proxy resting " in out and len(proxy.requests) == asked  # straight to the next
    finally:
        proxy.stop()
