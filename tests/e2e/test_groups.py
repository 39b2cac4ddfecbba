# Group chats from the outside: the bot answers only when mentioned or replied to, allowlisted senders only.
import json

import pytest

from host_sim.fake_anthropic import text
from tests.e2e.conftest import API_KEY, TG_TOKEN

TOKEN = TG_TOKEN
OWNER, FRIEND, STRANGER = 42, 7, 666
GROUP = -1001234567890


@pytest.fixture
def bot(boot, tg):
    dev = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow {} owner".format(OWNER),
                 "tg_allow {}".format(FRIEND)):
        dev.command(line)
    return dev


def _shown(tg, chat):
    return [m["shown"] for m in tg.sent(chat)]


def _user_text(request):
    return request["body"]["messages"][-1]["content"][-1]["text"]


def test_only_a_mention_gets_an_answer_and_the_mention_is_stripped(bot, tg, fake, flash):
    tg.user_message(OWNER, "anyone up for lunch?", chat_id=GROUP)
    tg.user_message(STRANGER, "spam spam", chat_id=GROUP)
    fake.script(text("Hello group."))
    tg.user_message(FRIEND, "@{} what time is it?".format(tg.bot_username), chat_id=GROUP)
    # a group has no drafts: the reply is sent, then edited as it grows, so wait for its whole text
    assert tg.wait_for(lambda: _shown(tg, GROUP) == ["Hello group."], 30), (_shown(tg, GROUP), bot.output[-2000:])
    assert _shown(tg, GROUP) == ["Hello group."]  # the talk between people got no reply
    assert len(fake.requests) == 1 and _user_text(fake.requests[0]).endswith("what time is it?")
    assert "@" + tg.bot_username not in _user_text(fake.requests[0])
    assert tg.drafts(GROUP) == []  # drafts exist only in private chats
    assert (flash / "data" / "sessions" / "telegram_{}.jsonl".format(GROUP)).exists()  # one session per group
    fake.script(text("Private hello, streamed slowly enough to be seen.", chunk=6, delay=0.15))
    tg.user_message(OWNER, "hi")  # private chats still stream into drafts
    assert tg.wait_for(lambda: "Private hello, streamed slowly enough to be seen." in _shown(tg, OWNER), 30)
    assert tg.drafts(OWNER)


def test_a_reply_to_the_bot_is_answered_and_the_session_is_the_groups(bot, tg, fake):
    fake.script(text("First answer."), text("Second answer."))
    tg.user_message(OWNER, "hey @{}".format(tg.bot_username.upper()), chat_id=GROUP)
    assert tg.wait_for(lambda: _shown(tg, GROUP), 30), bot.output[-2000:]
    first = tg.sent(GROUP)[0]["message_id"]
    tg.user_message(FRIEND, "and what about me?", chat_id=GROUP, reply_to=first)
    assert tg.wait_for(lambda: len(_shown(tg, GROUP)) == 2, 30), bot.output[-2000:]
    history = fake.wait_requests(2)[1]["body"]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]  # the group's one conversation
    assert json.dumps(history[1]["content"]).find("First answer.") >= 0


def test_a_stranger_mentioning_the_bot_gets_the_allowlist_note_and_no_llm_call(bot, tg, fake):
    tg.user_message(STRANGER, "@{} hello".format(tg.bot_username), chat_id=GROUP, username="eve")
    assert tg.wait_for(lambda: _shown(tg, GROUP), 20)
    assert "tg_allow 666" in _shown(tg, GROUP)[0] and fake.requests == []


def test_a_photo_in_a_group_is_read_only_when_its_caption_mentions_the_bot(bot, tg, fake):
    from host_sim.telegram_files import jpeg_bytes

    sizes = [(320, 240, jpeg_bytes(20000))]
    tg.photo_message(OWNER, sizes, caption="look at my lunch", chat_id=GROUP)
    tg.photo_message(FRIEND, sizes, caption="@{} what is this?".format(tg.bot_username), chat_id=GROUP)
    assert tg.wait_for(lambda: _shown(tg, GROUP), 30), bot.output[-2000:]
    assert len(fake.requests) == 1 and len(tg.downloads) == 1  # the photo between people: not even fetched
    blocks = fake.requests[0]["body"]["messages"][-1]["content"]
    assert blocks[1]["type"] == "image" and blocks[2]["text"] == "what is this?"
