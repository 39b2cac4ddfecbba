# Budgets from the outside: the daily token budget warns the owner, stops the agent politely, survives a
# restart and can be raised; `usage` shows the tokens and costs; a chatty gateway client is slowed down.
import asyncio
import json

from websockets.asyncio.client import connect

from host_sim.fake_anthropic import text
from tests.e2e.gateway_client import hello, say, until_reply
from tests.e2e import test_telegram
from tests.e2e.conftest import API_KEY
from tests.e2e.test_telegram import OWNER

bot = test_telegram.bot  # the Telegram tests' fixture: a bot with its owner


def billed(input_tokens, output_tokens, cache_read=0, cache_write=0):
    """Usage figures for the fake to report instead of its approximations."""
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write}


def test_the_day_budget_warns_at_80_percent_stops_at_100_and_raising_it_lets_the_agent_answer(
        device, fake, flash):
    assert "daily token budget set to 1000 tokens" in device.command("budget 1000")
    fake.script(text("First answer.", usage=billed(600, 250)))
    out = device.command("chat hello", timeout=30)
    assert "First answer." in out
    assert "notice: budget: 85% of today's token budget used (850 of 1000 tokens)" in out

    fake.script(text("Second answer.", usage=billed(150, 100, cache_read=40, cache_write=10)))
    out = device.command("chat and again", timeout=30)
    assert "Second answer." in out
    assert "notice: budget: today's token budget is used up (1150 of 1000 tokens)" in out
    assert len(fake.requests) == 2

    out = device.command("chat are you there?", timeout=30)
    assert "mimi: I've used today's token budget (1150 of 1000 tokens)" in out
    assert "budget <tokens>" in out and "after midnight UTC" in out
    assert len(fake.requests) == 2  # the polite stop cost no LLM call
    assert out.count("notice:") == 0  # the owner was told once, when 100% was reached

    usage = device.command("usage")
    line = ("claude-sonnet-4-5: input 750, output 350, cache read 40, cache write 10 = 1150 tokens, "
            "about $0.0076")  # (750 + 0.1 x 40 + 1.25 x 10) x $3 + 350 x $15 per million
    assert usage.count(line) == 2  # today and this month
    assert "budget: 1150 of 1000 tokens today (115%); STOPPED" in usage
    assert "model calls this hour: 2 of 200" in usage

    device.restart()  # the counts were written when 100% was crossed
    assert "budget: 1150 of 1000 tokens today" in device.command("usage")
    assert "I've used today's token budget" in device.command("chat still there?", timeout=30)
    assert len(fake.requests) == 2
    saved = json.loads((flash / "data" / "usage.json").read_text())
    assert saved["today"] == {"claude-sonnet-4-5": [750, 350, 40, 10, 0]}

    assert "daily token budget set to 5000 tokens" in device.command("budget 5000")
    fake.script(text("Back again."))
    assert "Back again." in device.command("chat and now?", timeout=30)
    assert len(fake.requests) == 3


def test_a_gateway_client_over_its_messages_per_minute_is_told_when_to_try_again(gateway, fake):  # noqa: F811
    assert "= 2" in gateway.device.command("config_set safety_config.user_per_min 2")
    fake.script(text("One."), text("Two."), text("Other chat."))

    async def chat():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            answers = []
            for content in ("one", "two", "three"):
                await ws.send(say(content))
                answers.append((await until_reply(ws))[-1])
            await ws.send(say("hello from another chat", chat_id="kitchen"))
            answers.append((await until_reply(ws))[-1])
            return answers

    one, two, three, other = asyncio.run(chat())
    assert (one["content"], two["content"]) == ("One.", "Two.")
    assert three["type"] == "response" and "at most 2 a minute" in three["content"]
    assert "Please try again in" in three["content"]
    assert other["content"] == "Other chat."  # another chat is another user
    assert len(fake.requests) == 3  # the refused message cost no LLM call


def test_over_telegram_the_owner_is_told_and_the_next_user_message_gets_the_polite_stop(bot, tg, fake):
    dev = bot(allow=(OWNER, 7))
    dev.command("config_set tg_config.roles {}=owner".format(OWNER))  # the owner hears the notices
    tg.user_message(OWNER, "/start")  # a bot can only write to someone who wrote to it first
    assert tg.wait_for(lambda: tg.sent(OWNER), 30)
    dev.command("budget 1000")
    fake.script(text("Here you go.", usage=billed(900, 200)))
    tg.user_message(7, "what's up?")
    assert tg.wait_for(lambda: tg.sent(7), 30)
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 15), dev.output[-2000:]
    assert "today's token budget is used up (1100 of 1000 tokens)" in tg.sent(OWNER)[1]["shown"]
    tg.user_message(7, "and another thing")
    assert tg.wait_for(lambda: len(tg.sent(7)) == 2, 30)
    assert tg.sent(7)[1]["shown"].startswith("I've used today's token budget (1100 of 1000 tokens)")
    assert len(fake.requests) == 1  # the stop cost no LLM call
    assert len(tg.sent(OWNER)) == 2  # told once


def test_the_offline_demo_s_tokens_are_counted_but_never_spend_the_budget(boot, fake):
    dev = boot("--model", "offline-demo")  # as make sim runs its demo brain
    dev.command("set_api_key " + API_KEY)
    assert "daily token budget set to 1000 tokens" in dev.command("budget 1000")
    for n in range(2):
        fake.script(text("Demo answer {}.".format(n), usage=billed(900, 300)))
        out = dev.command("chat hello {}".format(n), timeout=30)
        assert "Demo answer {}.".format(n) in out and "notice:" not in out  # no warning, no stop
    usage = dev.command("usage")
    assert "offline demo (make sim's stand-in: not billed): input 1800, output 600" in usage  # counted
    assert "budget: 0 of 1000 tokens today" in usage
    assert "plus 2400 tokens of free profiles and the offline demo today (never counted against the budget)" in usage
    assert len(fake.requests) == 2
