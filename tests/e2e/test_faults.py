# Every injected fault, seen from outside under both runtimes: what the user gets, and that the device goes on.
import time

import pytest

from host_sim.fake_anthropic import error, garbage, long_line, text
from tests.e2e.conftest import API_KEY, TG_TOKEN

TOKEN = TG_TOKEN
OWNER = 42


@pytest.fixture
def bot(boot, tg):
    dev = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow {}".format(OWNER)):
        dev.command(line)
    return dev


def _shown(tg, chat=OWNER):
    return [m["shown"] for m in tg.sent(chat)]


def test_claude_refusals_and_server_errors_read_as_plain_sentences(device, fake):
    fake.script(error(403, message="This organization has been disabled."))
    assert "not allowed to do that (403): This organization has been disabled." in device.command("chat a")
    fake.script(error(413, type="request_too_large", message="Request exceeds the maximum allowed size"))
    assert "too large for one request (413)" in device.command("chat b")
    fake.script(error(500), text("After one internal error."))
    assert "After one internal error." in device.command("chat c", timeout=40)
    assert [r["status"] for r in fake.wait_requests(4)[2:]] == [500, 200]


def test_garbage_lines_are_skipped_and_an_over_long_line_is_refused_without_harm(device, fake):
    fake.script(garbage("Clean answer despite the noise."))
    assert "mimi: Clean answer despite the noise." in device.command("chat noisy")
    device.command("set_search off")  # no server tools: event lines are held to 16 KB
    fake.script(*[long_line(20000)] * 4, text("Back to normal."))  # retried before any text, then given up
    out = device.command("chat huge", timeout=40)
    assert "Claude's reply could not be read: line from 127.0.0.1 longer than 16384 bytes (tried 4 times)" in out
    assert "Back to normal." in device.command("chat again")
    device.command("set_search server")  # a search result block arrives as one line: 64 KB, never more
    fake.script(*[long_line(70000)] * 4, text("Normal again."))
    out = device.command("chat huger", timeout=40)
    assert "Claude's reply could not be read: line from 127.0.0.1 longer than 65536 bytes (tried 4 times)" in out
    assert "Normal again." in device.command("chat again")


def test_telegram_server_errors_resets_and_malformed_polls_are_survived(boot, tg, fake):
    bot = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "tg_allow {}".format(OWNER)):
        bot.command(line)
    tg.fail_next("getUpdates", 500)
    tg.fail_next("getUpdates", 502)  # the proxy's HTML page, not JSON
    tg.reset_connection_next("getUpdates")
    tg.malformed_next("getUpdates")
    bot.command("set_tg_token " + TOKEN)  # the first polls meet the faults

    def faulted():
        return [c for c in tg.calls if c["method"] == "getUpdates" and (c["status"] != 200 or c.get("fault"))]

    assert tg.wait_for(lambda: len(faulted()) == 4, 90), bot.output[-2000:]  # backoff 1, 2, 4, 8 s
    fake.script(text("Through all of it."))
    tg.user_message(OWNER, "still there?")
    assert tg.wait_for(lambda: _shown(tg), 90), bot.output[-2000:]
    assert _shown(tg) == ["Through all of it."]
    assert "getUpdates failed" in bot.output and "network error" in bot.output
    assert TOKEN not in bot.output and "SECRETPART" not in bot.output


def test_a_reply_that_meets_telegram_server_errors_arrives_once(bot, tg, fake):
    tg.fail_next("sendMessage", 502, times=2)
    fake.script(text("Delivered in the end."))
    tg.user_message(OWNER, "hello")
    assert tg.wait_for(lambda: _shown(tg), 60), bot.output[-2000:]
    assert _shown(tg) == ["Delivered in the end."]
    failed = [c for c in tg.calls if c["method"] == "sendMessage" and c["status"] != 200]
    assert len(failed) == 2


def _telegram_goes_away_mid_reply(tg):
    """The owner writes "ping"; Telegram stops answering while the (slow) reply streams, and comes back on
    the same address with tg.start()."""
    tg.user_message(OWNER, "ping")
    assert tg.wait_for(lambda: any(c["method"] == "sendChatAction" for c in tg.calls), 30)
    time.sleep(0.5)  # the typing call is answered; the reply is still streaming when Telegram goes away
    tg.port = int(tg.url.rsplit(":", 1)[1])
    tg.stop()


def test_a_reply_is_kept_until_telegram_can_be_reached_again(bot, tg, fake):
    # Telegram unreachable when the reply is ready (the link is down): the reply waits and goes out once.
    fake.script(text("Worth the wait.", chunk=3, delay=0.4))
    _telegram_goes_away_mid_reply(tg)
    bot.expect("reply not sent .*cannot reach 127.0.0.1.*trying again", timeout=40)
    tg.start()
    assert tg.wait_for(lambda: _shown(tg), 60), bot.output[-2000:]
    assert _shown(tg) == ["Worth the wait."]


def test_a_reply_telegram_cannot_take_for_long_waits_on_flash_and_arrives_once_after_a_restart(boot, tg, fake, flash):
    # Telegram out of reach for longer than the sender's patience, and a power cycle meanwhile.
    health = ("--health", "tg_patience_s=2,tg_outbox_s=1")
    bot = boot("--telegram-api", tg.url, *health)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow {}".format(OWNER)):
        bot.command(line)
    fake.script(text("Late, but here.", chunk=3, delay=0.4), text("And the next one."))
    _telegram_goes_away_mid_reply(tg)
    bot.expect("reply to chat 42 not delivered .*it is kept and sent once Telegram answers", timeout=40)
    assert "Late, but here." in (flash / "data" / "tg_outbox.json").read_text()
    bot.stop()
    bot = boot("--telegram-api", tg.url, *health)
    assert "Telegram: 1 reply is waiting to be delivered" in bot.output
    tg.start()
    assert tg.wait_for(lambda: _shown(tg), 60), bot.output[-2000:]
    tg.user_message(OWNER, "and now?")
    assert tg.wait_for(lambda: len(_shown(tg)) == 2, 60), bot.output[-2000:]
    assert _shown(tg) == ["Late, but here.", "And the next one."]  # each once, in order
    assert len(fake.requests) == 2  # "ping" was not answered a second time
    assert (flash / "data" / "tg_outbox.json").read_text() == "[]"


def test_a_poll_answered_later_than_the_client_waits_is_cut_and_polling_goes_on(boot, tg, fake):
    bot = boot("--telegram-api", tg.url, "--health", "tg_poll_s=2,tg_grace_s=2")
    for line in ("set_api_key " + API_KEY, "tg_allow {}".format(OWNER)):
        bot.command(line)
    tg.slow_next("getUpdates", 8)  # Telegram (or a proxy) answers after the client's 4 s
    bot.command("set_tg_token " + TOKEN)
    bot.expect(r"network error: timed out reading from 127.0.0.1 after 4 s", timeout=30)
    fake.script(text("Polling goes on."))
    tg.user_message(OWNER, "hello?")
    assert tg.wait_for(lambda: _shown(tg), 40), bot.output[-2000:]
    assert _shown(tg) == ["Polling goes on."]
