# The kill matrix: SIGKILL at each point of a Telegram message's life, restart, count the replies.
import pytest

from host_sim.fake_anthropic import stall, text
from tests.e2e.conftest import API_KEY, TG_TOKEN

TOKEN = TG_TOKEN
OWNER = 42
REPLY_WAIT_S = 40


@pytest.fixture
def bot(boot, tg):
    """bot() boots the firmware on the test's flash; the first boot provisions it."""
    provisioned = []

    def start():
        dev = boot("--telegram-api", tg.url)
        if not provisioned:
            for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN,
                         "tg_allow {}".format(OWNER)):
                dev.command(line)
            provisioned.append(True)
        return dev

    return start


def replies_to(tg, tag):
    """The bot's final messages that answer the message tagged `tag` (the default brain echoes)."""
    return [m["shown"] for m in tg.sent(OWNER) if tag in m["shown"]]


def settle(tg, dev, update_id, *tags):
    """Wait until every tag has a reply and Telegram has confirmed update_id: the bot confirms
    only what it answered, so no further reply to these can come."""
    assert tg.wait_for(lambda: all(replies_to(tg, t) for t in tags), REPLY_WAIT_S), \
        dev.output[-3000:]
    assert tg.wait_for(lambda: tg.offset_confirmed >= update_id, REPLY_WAIT_S), \
        dev.output[-3000:]


def assert_exactly_once(tg, *tags):
    """One reply per tagged message, and no other message in the chat (an untagged duplicate)."""
    shown = [m["shown"] for m in tg.sent(OWNER)]
    counts = {tag: len(replies_to(tg, tag)) for tag in tags}
    assert counts == {tag: 1 for tag in tags} and len(shown) == len(tags), shown


def test_killed_while_the_message_waits_at_telegram(bot, tg):
    dev = bot()
    dev.stop()
    update_id = tg.user_message(OWNER, "question Q1")  # queued, never fetched
    again = bot()
    settle(tg, again, update_id, "Q1")
    assert_exactly_once(tg, "Q1")


def test_killed_after_the_fetch_while_waiting_for_claude(bot, tg, fake):
    dev = bot()
    fake.script(stall("", seconds=60, before_headers=True))  # Claude says nothing at all
    update_id = tg.user_message(OWNER, "question Q2")
    # The whole request is at Claude (its last byte read): the stalled reply is the one it gets.
    # (the fake notes the last byte just before it takes the script's reply: wait for both)
    assert tg.wait_for(lambda: [r for r in fake.requests if "body_read_at" in r] and fake.pending == 0, 20)
    assert tg.offset_confirmed == 0  # fetched, not confirmed
    dev.stop()
    again = bot()
    settle(tg, again, update_id, "Q2")
    assert_exactly_once(tg, "Q2")


def test_killed_mid_stream(bot, tg, fake):
    dev = bot()
    fake.script(text("Slow start " + "s" * 300, chunk=4, delay=0.1))
    update_id = tg.user_message(OWNER, "question Q3")
    assert tg.wait_for(lambda: any("Slow start" in d["shown"] for d in tg.drafts(OWNER)), 20)
    dev.stop()
    again = bot()
    settle(tg, again, update_id, "Q3")
    assert_exactly_once(tg, "Q3")  # the reply cut by the kill was never sent as a message


def test_killed_after_the_reply_before_the_offset_reaches_telegram(bot, tg, fake):
    dev = bot()
    fake.script(text("Slow reply to Q4 " + "r" * 200, chunk=8, delay=0.1))
    update_id = tg.user_message(OWNER, "question Q4")
    assert tg.wait_for(lambda: tg.drafts(OWNER), 20)
    tg.slow_next("getUpdates", 60)  # the poll that would confirm the offset hangs in the network
    assert tg.wait_for(lambda: replies_to(tg, "Q4"), REPLY_WAIT_S)
    assert tg.wait_for(lambda: tg.calls[-1]["method"] == "getUpdates", 10)
    assert tg.offset_confirmed < update_id  # Telegram still holds the update
    dev.stop()
    again = bot()
    settle(tg, again, update_id, "Q4")
    assert_exactly_once(tg, "Q4")


def test_killed_after_the_offset_was_confirmed(bot, tg):
    dev = bot()
    update_id = tg.user_message(OWNER, "question Q5")
    settle(tg, dev, update_id, "Q5")
    dev.stop()
    again = bot()
    update_id = tg.user_message(OWNER, "question Q6")
    settle(tg, again, update_id, "Q6")
    assert_exactly_once(tg, "Q5", "Q6")


def test_a_batch_killed_after_its_first_answer_does_not_answer_it_again(bot, tg, fake):
    dev = bot()
    dev.stop()
    tg.user_message(OWNER, "question Q7")
    update_id = tg.user_message(OWNER, "question Q8")  # both fetched in one getUpdates batch
    fake.script(text("Fast answer to Q7"), text("Slow start " + "s" * 300, chunk=4, delay=0.1))
    dev = bot()
    assert tg.wait_for(lambda: replies_to(tg, "Q7"), REPLY_WAIT_S), dev.output[-3000:]
    assert tg.wait_for(lambda: any("Slow start" in d["shown"] for d in tg.drafts(OWNER)), 20)
    dev.stop()  # Q7 answered, Q8 mid-stream
    again = bot()
    settle(tg, again, update_id, "Q8")
    assert_exactly_once(tg, "Q7", "Q8")


def test_the_same_update_delivered_twice_is_answered_once(bot, tg):
    dev = bot()
    tg.duplicate_next_update()
    update_id = tg.user_message(OWNER, "question Q9")
    settle(tg, dev, update_id, "Q9")
    deliveries = [c for c in tg.calls if c["method"] == "getUpdates" and c["status"] == 200
                  and "Q9" in str(c["response"])]
    assert len(deliveries) == 2  # the fake really did deliver it twice
    assert_exactly_once(tg, "Q9")


def test_killed_after_the_reply_went_out_before_the_bot_heard_so(bot, tg, fake):
    """At-least-once here: Telegram has no idempotent send, so a reply delivered in the instant
    before the kill is sent again after the restart (RELIABILITY.md, "the kill matrix")."""
    dev = bot()
    tg.hold_answer_next("sendMessage", 60)  # sendMessage takes effect; its answer never reaches the bot
    update_id = tg.user_message(OWNER, "question Q10")
    assert tg.wait_for(lambda: any(c.get("held") for c in tg.calls), REPLY_WAIT_S), dev.output[-3000:]
    assert len(replies_to(tg, "Q10")) == 1
    dev.stop()
    again = bot()
    settle(tg, again, update_id, "Q10")
    assert len(replies_to(tg, "Q10")) == 2  # delivered twice, never lost
