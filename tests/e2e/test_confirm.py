# Confirmations from the outside: a `confirm` tool asks first (Telegram buttons, a gateway frame, the
# console) and runs only on Approve; Deny and silence refuse it; stale buttons say so.
import asyncio
import json
import re

import pytest
from websockets.asyncio.client import connect

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY, TG_TOKEN, free_port

TOKEN = TG_TOKEN
OWNER, OPERATOR = 42, 7
LIGHT_ON = {"pin": 4, "value": 1}


@pytest.fixture
def bot(boot, tg):
    dev = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow {} owner".format(OWNER),
                 "tg_allow {}".format(OPERATOR), "gpio_allow 4", "tool_policy gpio_write confirm"):
        dev.command(line)
    return dev


def _question(tg, chat):
    """(message_id, approve data, deny data) of the newest message with buttons in the chat."""
    for message in reversed(tg.sent(chat)):
        if message["reply_markup"]:
            row = message["reply_markup"]["inline_keyboard"][0]
            assert [b["text"] for b in row] == ["Approve", "Deny"]
            return message["message_id"], row[0]["callback_data"], row[1]["callback_data"]
    return None


def _shown(tg, chat):
    return [m["shown"] for m in tg.sent(chat)]


def _tool_result(request):
    return request["body"]["messages"][-1]["content"][0]


def test_a_confirm_tool_runs_only_after_approve_and_stale_buttons_say_so(bot, tg, fake):
    fake.script(tool_use("gpio_write", LIGHT_ON), text("The light is on."))
    update = tg.user_message(OWNER, "light on please")
    assert tg.wait_for(lambda: _question(tg, OWNER), 30), bot.output[-2000:]
    message_id, approve, _ = _question(tg, OWNER)
    assert _shown(tg, OWNER)[-1] == 'May I run gpio_write with {"pin": 4, "value": 1}?'
    assert len(fake.requests) == 1  # nothing ran yet: the turn waits for the button
    assert tg.offset_confirmed < update  # the asking message is not confirmed while it waits (a kill replays it)
    tg.callback_query(OPERATOR, approve, message_id, chat_id=OWNER)  # not the asker, not an owner
    assert tg.wait_for(lambda: tg.callback_answers, 15)
    assert tg.callback_answers[0]["text"] == "Only the person who asked, or an owner, can answer this."
    tg.callback_query(OWNER, approve, message_id)
    assert tg.wait_for(lambda: "The light is on." in _shown(tg, OWNER), 30), bot.output[-2000:]
    assert tg.callback_answers[1]["text"] == "Approved"
    result = _tool_result(fake.wait_requests(2)[1])
    assert result["is_error"] is False and '"value": 1' in result["content"]
    question = [m for m in tg.sent(OWNER) if m["message_id"] == message_id][0]
    assert question["shown"].endswith("Approved \u2705") and question["reply_markup"] is None  # buttons gone
    tg.callback_query(OWNER, approve, message_id)  # the same button again
    assert tg.wait_for(lambda: len(tg.callback_answers) == 3, 15)
    assert "no longer open" in tg.callback_answers[2]["text"]
    assert len(fake.requests) == 2


def test_a_waiting_confirmation_keeps_the_operators_role_and_chat_while_the_console_runs_a_tool(bot, tg, fake):
    # Each tool call runs for its own turn: the console's tool_exec (the owner) while an operator's cron_add
    # waits for its button must not lend the job the console's role or chat.
    bot.command("tool_policy cron_add confirm")
    fake.script(tool_use("cron_add", {"schedule": "every", "seconds": 3600, "message": "Water the plants"}),
                text("Scheduled."))
    tg.user_message(OPERATOR, "remind me every hour to water the plants")
    assert tg.wait_for(lambda: _question(tg, OPERATOR), 30), bot.output[-2000:]
    message_id, approve, _ = _question(tg, OPERATOR)
    assert '"utc"' in bot.command("tool_exec get_current_time {}", timeout=20)  # the owner, meanwhile
    tg.callback_query(OPERATOR, approve, message_id)
    assert tg.wait_for(lambda: "Scheduled." in _shown(tg, OPERATOR), 30), bot.output[-2000:]
    job = json.loads(_tool_result(fake.wait_requests(2)[1])["content"])
    assert (job["answer_in"], job["acts_as"]) == ("telegram:{}".format(OPERATOR), "operator")
    listed = bot.command("cron_list", timeout=20)
    assert "telegram:{}".format(OPERATOR) in listed and "operator" in listed, listed


def test_deny_refuses_and_the_model_hears_it(bot, tg, fake):
    fake.script(tool_use("gpio_write", LIGHT_ON), text("Okay, I left it off."))
    tg.user_message(OWNER, "light on")
    assert tg.wait_for(lambda: _question(tg, OWNER), 30), bot.output[-2000:]
    message_id, _, deny = _question(tg, OWNER)
    tg.callback_query(OWNER, deny, message_id)
    assert tg.wait_for(lambda: "Okay, I left it off." in _shown(tg, OWNER), 30)
    result = _tool_result(fake.wait_requests(2)[1])
    assert result["is_error"] is True and result["content"] == "the user denied running gpio_write; it was not run"
    assert tg.callback_answers[0]["text"] == "Denied"
    assert [m for m in tg.sent(OWNER) if m["message_id"] == message_id][0]["shown"].endswith("Denied \u274c")


def test_no_answer_in_time_means_no_and_messages_sent_meanwhile_are_answered_after(bot, tg, fake):
    bot.command("config_set safety_config.confirm_s 5")
    fake.script(tool_use("gpio_write", LIGHT_ON), text("Nobody approved, so no light."), text("Second answer."))
    tg.user_message(OWNER, "light on")
    assert tg.wait_for(lambda: _question(tg, OWNER), 30), bot.output[-2000:]
    message_id = _question(tg, OWNER)[0]
    second = tg.user_message(OWNER, "and another thing")  # arrives while the question waits
    assert tg.wait_for(lambda: "Nobody approved, so no light." in _shown(tg, OWNER), 30), bot.output[-2000:]
    assert tg.wait_for(lambda: "Second answer." in _shown(tg, OWNER), 30), bot.output[-2000:]
    result = _tool_result(fake.wait_requests(2)[1])
    assert result["is_error"] is True and result["content"] == "nobody approved gpio_write within 5 s; it was not run"
    question = [m for m in tg.sent(OWNER) if m["message_id"] == message_id][0]
    assert "Timed out" in question["shown"] and question["reply_markup"] is None
    assert fake.wait_requests(3)[2]["body"]["messages"][-1]["content"][-1]["text"].endswith("and another thing")
    assert tg.wait_for(lambda: tg.offset_confirmed >= second, 40)
    assert _shown(tg, OWNER).count("Second answer.") == 1  # answered once


def test_the_console_asks_yes_or_no(device, fake):
    device.command("gpio_allow 4")
    device.command("tool_policy gpio_write confirm")
    fake.script(tool_use("gpio_write", LIGHT_ON), text("Done, the light is on."))
    device.send("chat light on")
    device.expect(re.escape('confirm: May I run gpio_write with {"pin": 4, "value": 1}? [y/n]'), 30)
    out = device.command("y", timeout=30)
    assert "Done, the light is on." in out and "Approved" in out
    assert _tool_result(fake.wait_requests(2)[1])["is_error"] is False
    fake.script(tool_use("gpio_write", LIGHT_ON), text("Left off."))
    device.send("chat light on again")
    device.expect(r"\[y/n\]", 30)
    device.send("maybe")
    device.expect("please answer y or n", 10)
    out = device.command("n", timeout=30)
    assert "Left off." in out
    assert "denied" in _tool_result(fake.wait_requests(4)[3])["content"]


async def _gateway_confirm(port, token, approve):
    async with connect("ws://127.0.0.1:{}/ws?token={}".format(port, token)) as ws:
        frames = [json.loads(await asyncio.wait_for(ws.recv(), 20))]
        await ws.send(json.dumps({"type": "message", "content": "light on"}))
        while frames[-1]["type"] not in ("response", "error"):
            frames.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
            if frames[-1]["type"] == "confirm":
                await ws.send(json.dumps({"type": "confirm", "id": "nope", "approve": True}))
                await ws.send(json.dumps({"type": "confirm", "id": frames[-1]["id"], "approve": approve}))
        return frames


def test_the_gateway_asks_with_a_confirm_frame(boot, fake):
    port = free_port()
    dev = boot("--ws-port", str(port))
    dev.command("set_api_key " + API_KEY)
    dev.command("gpio_allow 4")
    dev.command("tool_policy gpio_write confirm")
    token = re.search(r"gateway token: (\S+)", dev.command("ws_token")).group(1)
    fake.script(tool_use("gpio_write", LIGHT_ON), text("Light on."))
    frames = asyncio.run(_gateway_confirm(port, token, True))
    kinds = [f["type"] for f in frames]
    question = frames[kinds.index("confirm")]
    assert question["tool"] == "gpio_write" and question["input"] == LIGHT_ON and question["id"]
    assert {"type": "notice", "content": "That question is no longer open (already answered or expired).",
            "chat_id": question["chat_id"]} in frames
    assert {"type": "confirmed", "id": question["id"], "outcome": "approved",
            "chat_id": question["chat_id"]} in frames
    assert frames[-1]["type"] == "response" and frames[-1]["content"] == "Light on."
    assert _tool_result(fake.wait_requests(2)[1])["is_error"] is False
    fake.script(tool_use("gpio_write", LIGHT_ON), text("Not switched."))
    frames = asyncio.run(_gateway_confirm(port, token, False))
    assert any(f["type"] == "confirmed" and f["outcome"] == "denied" for f in frames)
    assert "denied" in _tool_result(fake.wait_requests(4)[3])["content"]
