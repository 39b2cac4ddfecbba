# Telegram from the outside: allowlist, streamed drafts, final messages, reboots, faults.
import json
import re

import pytest

from host_sim.fake_anthropic import text
from host_sim.fake_telegram import FakeTelegram
from tests.e2e.conftest import API_KEY, TG_TOKEN
from tests.runtimes import RUNTIMES_WITH_ROMFS_TELEGRAM as RUNTIMES_WITH_ROMFS

TOKEN = TG_TOKEN
OWNER = 42


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    """Both runtimes, and the ROMFS form at the heap of BENCHMARKS.md (tests/runtimes.py)."""
    return RUNTIMES_WITH_ROMFS[request.param]


@pytest.fixture
def bot(boot, tg):
    """boot_bot(): firmware with key, bot token and the owner admitted."""

    def start(allow=(OWNER,)):
        dev = boot("--telegram-api", tg.url)
        dev.command("set_api_key " + API_KEY)
        dev.command("set_tg_token " + TOKEN)
        for user in allow:
            dev.command("tg_allow {}".format(user))
        return dev

    return start


def _shown(tg, chat):
    return [m["shown"] for m in tg.sent(chat)]


def test_allowlisted_message_streams_into_a_draft_then_one_final_message(bot, tg, fake, flash):
    dev = bot()
    reply = "Hello **Ada**! " + " ".join("word{}".format(i) for i in range(40))
    fake.script(text(reply, chunk=6, delay=0.08))
    tg.user_message(OWNER, "hi")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30)
    final = tg.sent(OWNER)
    assert len(final) == 1 and final[0]["parse_mode"] == "HTML"
    assert "<b>Ada</b>" in final[0]["text"] and final[0]["shown"] == reply.replace("**", "")
    drafts = tg.drafts(OWNER)
    assert len(drafts) >= 2  # the reply grew visibly while Claude wrote it
    assert all(d["draft_id"] == drafts[0]["draft_id"] for d in drafts)
    assert len(drafts[0]["shown"]) < len(drafts[-1]["shown"]) <= len(final[0]["shown"])
    assert "typing" in tg.actions(OWNER)
    lines = (flash / "data" / "sessions" / "telegram_42.jsonl").read_text().splitlines()
    assert [json.loads(line)["role"] for line in lines] == ["user", "assistant"]
    assert TOKEN not in dev.output and "SECRETPART" not in dev.output


def test_long_reply_is_split_at_4096_characters_on_paragraphs(bot, tg, fake):
    dev = bot()
    paragraphs = ["Paragraph {} ".format(i) + "x" * 1500 for i in range(6)]
    reply = "\n\n".join(paragraphs)
    fake.script(text(reply, chunk=400))
    tg.user_message(OWNER, "tell me a lot")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) >= 3, 30), dev.output[-3000:]
    parts = _shown(tg, OWNER)
    assert all(len(part) <= 4096 for part in parts)
    assert "".join(parts).replace("\n", "") == reply.replace("\n", "")
    assert all(part.startswith("Paragraph") for part in parts)  # cut between paragraphs


def test_a_stranger_gets_their_id_once_and_costs_no_llm_call(bot, tg, fake):
    dev = bot()
    tg.user_message(777, "hello?", username="eve")
    assert tg.wait_for(lambda: tg.sent(777), 15)
    dev.expect(r"Telegram user 777 \(@eve\) wants to chat: tg_allow 777")
    tg.user_message(777, "hello again")
    tg.wait_for(lambda: tg.offset_confirmed >= 2, 15)
    answers = _shown(tg, 777)
    assert len(answers) == 1 and "777" in answers[0] and "tg_allow 777" in answers[0]
    assert fake.requests == []
    dev.command("tg_allow 777")
    fake.script(text("Welcome, Eve."))
    tg.user_message(777, "now?")
    assert tg.wait_for(lambda: "Welcome, Eve." in _shown(tg, 777), 20), dev.output[-3000:]


def test_empty_allowlist_admits_nobody(bot, tg, fake):
    bot(allow=())
    tg.user_message(OWNER, "it's me")
    assert tg.wait_for(lambda: tg.sent(OWNER), 15)
    assert "tg_allow 42" in _shown(tg, OWNER)[0] and fake.requests == []


def test_a_reboot_mid_conversation_replays_nothing_and_loses_nothing(bot, boot, tg, fake):
    dev = bot()
    fake.script(text("Answer A."))
    tg.user_message(OWNER, "question A")
    assert tg.wait_for(lambda: "Answer A." in _shown(tg, OWNER), 20)
    fake.script(text("Slow answer B " + "b" * 400, chunk=4, delay=0.1), text("Answer B."))
    tg.user_message(OWNER, "question B")
    # The agent is mid-reply...
    assert tg.wait_for(lambda: any("Slow answer B" in d["shown"] for d in tg.drafts(OWNER)), 20)
    dev.stop()  # ...when the power goes
    again = boot("--telegram-api", tg.url)
    assert tg.wait_for(lambda: "Answer B." in _shown(tg, OWNER), 30), again.output + str(tg.calls[-5:])
    assert _shown(tg, OWNER) == ["Answer A.", "Answer B."]  # A not replayed, B not lost


def test_rate_limits_and_conflicts_are_survived(bot, tg, fake):
    tg.fail_next("getUpdates", 429, retry_after=1)
    tg.fail_next("getUpdates", 409, "Conflict: terminated by other getUpdates request; "
                 "make sure that only one bot instance is running")
    dev = bot()
    dev.pos = 0  # these may print while the console commands of bot() run
    dev.expect("rate limited, waiting 1 s", timeout=20)
    dev.expect("Conflict: terminated by other getUpdates request", timeout=20)
    fake.script(text("Still here."))
    tg.user_message(OWNER, "alive?")
    assert tg.wait_for(lambda: "Still here." in _shown(tg, OWNER), 40)


def test_refused_drafts_fall_back_to_one_edited_message(boot, fake, flash):
    tg = FakeTelegram(token=TOKEN, drafts="not_found")
    tg.start()
    try:
        dev = boot("--telegram-api", tg.url)
        for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow 42"):
            dev.command(line)
        reply = "Edited along the way: " + " ".join("w{}".format(i) for i in range(50))
        fake.script(text(reply, chunk=6, delay=0.08))
        tg.user_message(OWNER, "go")
        assert tg.wait_for(lambda: reply in _shown(tg, OWNER), 30)
        assert _shown(tg, OWNER) == [reply]
        assert any(c["method"] == "editMessageText" for c in tg.calls)
    finally:
        tg.stop()


def test_html_refused_goes_out_as_plain_text(bot, tg, fake):
    bot()
    tg.fail_next("sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag")
    fake.script(text("Some **bold** words."))
    tg.user_message(OWNER, "format")
    assert tg.wait_for(lambda: tg.sent(OWNER), 20)
    (message,) = tg.sent(OWNER)
    assert message["parse_mode"] is None and message["text"] == "Some **bold** words."


def test_bot_commands_and_non_text_messages(bot, tg, fake, flash):
    bot()
    tg.user_message(OWNER, "/start")
    assert tg.wait_for(lambda: tg.sent(OWNER), 15)
    assert re.search("Hi A!.*/new", _shown(tg, OWNER)[0], re.S)
    tg.non_text_message(OWNER, "sticker")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 2, 15)
    assert "not this kind of message" in _shown(tg, OWNER)[1]
    fake.script(text("Noted."))
    tg.user_message(OWNER, "remember this")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 3, 20)
    session = flash / "data" / "sessions" / "telegram_42.jsonl"
    assert session.exists()
    tg.user_message(OWNER, "/new")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) == 4, 15)
    assert "fresh conversation" in _shown(tg, OWNER)[3] and not session.exists()
    assert len(fake.requests) == 1


def test_a_tool_round_shows_using_tool_in_the_draft(bot, tg, fake):
    from host_sim.fake_anthropic import tool_use

    bot()
    fake.script(tool_use("get_current_time", {}), text("It is noon " + "z" * 200, chunk=8, delay=0.05))
    tg.user_message(OWNER, "time?")
    assert tg.wait_for(lambda: tg.sent(OWNER), 30)
    assert any("using get_current_time" in d["shown"] for d in tg.drafts(OWNER))
    assert "using" not in tg.sent(OWNER)[0]["shown"]
