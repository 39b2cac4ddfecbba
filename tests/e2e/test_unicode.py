# Text beyond ASCII through every path, as users write it: emoji (Telegram sends them as escaped
# surrogate pairs), flags, skin tones, joined sequences, CJK, right-to-left, combining marks.
import asyncio
import json

import pytest
from websockets.asyncio.client import connect

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY, TG_TOKEN, free_port
from tests.e2e.test_gateway import Gateway, frame, start

OWNER = 42
SAID = ("I love pizza \U0001f355 \U0001f1f5\U0001f1f9 \U0001f44d\U0001f3fd "
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 \u4f60\u597d \U00020000 "
        "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 cafe\u0301 \U0001d400")
REPLY = ("Pizza \U0001f355 it is! \U0001f1ee\U0001f1f9 \U0001f44b\U0001f3ff "
         "\U0001f469\u200d\U0001f4bb \u4e2d\u6587 \u05e2\u05d1\u05e8\u05d9\u05ea e\u0301 \U0001f600")


def _user_text(request):
    """The user's own words in a request (the last text block of the last user message)."""
    content = request["body"]["messages"][-1]["content"]
    return content if isinstance(content, str) else [b for b in content if b["type"] == "text"][-1]["text"]


def _session(flash, name):
    raw = (flash / "data" / "sessions" / (name + ".jsonl")).read_bytes()
    return [json.loads(line) for line in raw.decode("utf-8").splitlines()]  # strict: fails on bad UTF-8


def _accepted(fake, n):
    requests = fake.wait_requests(n)
    assert [r["status"] for r in requests] == [200] * n, [r.get("body") for r in requests]
    return requests


@pytest.fixture
def bot(boot, tg):
    dev = boot("--telegram-api", tg.url)
    dev.command("set_api_key " + API_KEY)
    dev.command("set_tg_token " + TG_TOKEN)
    dev.command("tg_allow {} owner".format(OWNER))
    return dev


@pytest.mark.parametrize("claude_escapes", [False, True], ids=["raw-utf8", "escaped"])
def test_telegram_in_and_out_with_drafts(bot, tg, fake, flash, claude_escapes):
    fake.escape_non_ascii = claude_escapes
    fake.script(text(REPLY, chunk=3, delay=0.15))
    tg.user_message(OWNER, SAID)  # the fake sends it as Telegram does: "\ud83c\udf55"
    assert tg.wait_for(lambda: tg.sent(OWNER), 30), bot.output[-3000:]
    (request,) = _accepted(fake, 1)
    assert _user_text(request).endswith(SAID)
    (final,) = tg.sent(OWNER)
    assert final["shown"] == REPLY
    drafts = [d["shown"] for d in tg.drafts(OWNER)]
    assert drafts and all(REPLY.startswith(d) for d in drafts)
    assert [(m["role"], m["content"]) for m in _session(flash, "telegram_42")] == [
        ("user", SAID), ("assistant", REPLY)]
    assert "\u26a0" not in bot.output


def test_a_long_reply_of_emoji_is_split_without_breaking_one(bot, tg, fake):
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    # 4001 code points, then flags: the 4096 limit falls between the two halves of a flag
    reply = "\U0001f355a" * 1500 + family * 200 + "x" + "\U0001f1f5\U0001f1f9" * 300
    fake.escape_non_ascii = True
    fake.script(text(reply, chunk=500))
    tg.user_message(OWNER, "emoji please \U0001f64f")
    assert tg.wait_for(lambda: "".join(m["shown"] for m in tg.sent(OWNER)) == reply, 60), bot.output[-3000:]
    first, second = [m["shown"] for m in tg.sent(OWNER)]
    assert len(first) == 4095 and first.endswith("\U0001f1f5\U0001f1f9")  # one back: the flag stays whole
    assert second == "\U0001f1f5\U0001f1f9" * (len(second) // 2)


def test_gateway_both_ways_escaped_or_raw(boot, fake, flash):
    port = free_port()
    gateway = Gateway(start(boot, port), port)
    fake.script(text(REPLY, chunk=4), text(REPLY, chunk=4))

    async def talk():
        async with connect(gateway.url()) as ws:
            hello = await frame(ws)
            replies = []
            for ascii_only in (True, False):  # Python's json escapes non-ASCII by default
                await ws.send(json.dumps({"type": "message", "content": SAID}, ensure_ascii=ascii_only))
                while True:
                    got = await frame(ws)
                    if got["type"] == "response":
                        replies.append(got["content"])
                        break
                    assert got["type"] == "token", got
            return hello["chat_id"], replies

    chat_id, replies = asyncio.run(talk())
    assert replies == [REPLY, REPLY]
    assert [_user_text(r).endswith(SAID) for r in _accepted(fake, 2)] == [True, True]
    assert [m["content"] for m in _session(flash, "websocket_" + chat_id)] == [SAID, REPLY, SAID, REPLY]


def test_console_chat_memory_and_a_tools_json_answer(device, fake, flash, web):
    device.command("set_search_key " + web.brave_key)
    device.command("config_set web_config.search_api {}/res/v1/web/search".format(web.url))
    fact = "The owner loves \U0001f355 and \U0001f1f5\U0001f1f9 \u2014 \u4f60\u597d"
    fake.escape_non_ascii = True  # the tool input arrives as JSON pieces that cut escapes apart
    fake.script(tool_use("remember", {"text": fact}, chunk=5),
                tool_use("web_search", {"query": "pizza \U0001f355 recipes"}),
                text(REPLY))
    out = device.command("chat remember: I love \U0001f355 and \U0001f1f5\U0001f1f9", timeout=60)
    assert REPLY in out
    first, second, third = _accepted(fake, 3)
    assert _user_text(first).endswith("remember: I love \U0001f355 and \U0001f1f5\U0001f1f9")
    (found,) = [b for b in third["body"]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert "pizza \U0001f355 recipes - result 1" in found["content"] and not found["is_error"]
    memory = (flash / "data" / "memory" / "MEMORY.md").read_bytes().decode("utf-8")
    assert fact in memory
    assert fact in device.command("memory_read")
    assert [m["content"] for m in _session(flash, "cli_console")] == [
        "remember: I love \U0001f355 and \U0001f1f5\U0001f1f9", REPLY]


def test_a_group_mention_after_emoji_is_found_and_stripped(bot, tg, fake):
    group = -1001234567890
    fake.script(text("Ciao \U0001f44b"))
    # Telegram counts the mention's entity offset in UTF-16 units (each emoji here is two): the
    # firmware finds the name in the text instead, so the emoji before it cannot shift it.
    said = "\U0001f355\U0001f1ee\U0001f1f9 @{} dove mangiamo? \U0001f914".format(tg.bot_username)
    tg.user_message(OWNER, said, chat_id=group)
    # no drafts in a group: the reply is sent, then edited as it grows
    assert tg.wait_for(lambda: [m["shown"] for m in tg.sent(group)] == ["Ciao \U0001f44b"], 30), bot.output[-2000:]
    (request,) = _accepted(fake, 1)
    assert _user_text(request).endswith("\U0001f355\U0001f1ee\U0001f1f9 dove mangiamo? \U0001f914")
