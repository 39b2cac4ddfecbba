# The Discord channel against host_sim/fake_discord.py (gateway and REST over TLS, checked by discord.py), both
# runtimes: direct messages answered with edits, dead links resumed, op 7, op 9, 429s and the 2000-character split.
import json
import re
import shutil
import time

import pytest

from host_sim.fake_anthropic import text
from host_sim.fake_discord import DEFAULT_TOKEN, FakeDiscord
from tests.certs import make_test_ca, server_context
from tests.e2e.conftest import API_KEY

USER = "200000000000000042"
STRANGER = "200000000000000077"


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return make_test_ca(tmp_path_factory.mktemp("discord_ca"))


@pytest.fixture
def dc(ca):
    with FakeDiscord(ssl_context=server_context(ca), heartbeat_interval_ms=1500) as server:
        yield server


@pytest.fixture
def bot(boot, dc, ca, flash):
    """start() boots the firmware trusting the test CA, pointed at the fake, with USER admitted as the owner."""

    def start():
        certs = flash / "data" / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        shutil.copy(ca["ca.der"], certs / "test_ca.der")
        dev = boot()
        dev.command("set_api_key " + API_KEY)
        dev.command("config_set dc_config.api_base " + dc.api_base)
        dev.command("discord_allow {} owner".format(USER))
        out = dev.command("discord_set " + DEFAULT_TOKEN)
        assert "saved" in out and DEFAULT_TOKEN not in dev.output
        dev.expect(r"Discord: connected as board-bot", timeout=30)
        assert dc.wait_for(lambda: dc.connected, 10)
        return dev

    return start


def _final(dc, channel, reply, timeout=60):
    return dc.wait_for(lambda: [m for m in dc.sent(channel) if m["content"] == reply], timeout)


def test_a_direct_message_is_answered_with_edits_and_a_stranger_told_their_id(bot, dc, fake):
    dev = bot()
    identify = dc.identifies[-1]
    assert identify["intents"] == (1 << 9) | (1 << 12)  # guild and direct messages; never GUILDS
    reply = "Hello **Ada**! " + " ".join("word{}".format(i) for i in range(60))
    fake.script(text(reply, chunk=8, delay=0.1))
    dc.user_message(USER, "hi there")
    channel = dc.dm_channel(USER)
    assert _final(dc, channel, reply), dev.output[-3000:]
    assert len(dc.sent(channel)) == 1 and len(dc.edits(channel)) >= 2  # one message, edited while it streamed
    dc.user_message(STRANGER, "let me in")
    dev.expect(r"Discord user {} \(user\) wants to chat: discord_allow {}".format(STRANGER, STRANGER), timeout=30)
    told = dc.wait_for(lambda: dc.sent(dc.dm_channel(STRANGER)), 20)
    assert STRANGER in told[0]["content"] and len(fake.requests) == 1
    assert DEFAULT_TOKEN not in dev.output and DEFAULT_TOKEN not in dev.command("discord_status")


def test_a_missing_heartbeat_ack_resumes_and_replays(bot, dc, fake):
    dev = bot()
    dc.stop_acks()
    fake.script(text("still here"))
    dc.user_message(USER, "are you there?")  # withheld by the dead link, replayed on RESUME
    dev.expect(r"Discord: no heartbeat ACK: the link is dead; resuming", timeout=30)
    dev.expect(r"Discord: session resumed", timeout=30)
    assert _final(dc, dc.dm_channel(USER), "still here")
    assert len(dc.identifies) == 1 and dc.resumes and dc.resumes[-1]["outcome"] == "resumed"


def test_op7_reconnects_with_resume(bot, dc, fake):
    dev = bot()
    dc.send_reconnect()
    dev.expect(r"Discord: session resumed", timeout=30)
    fake.script(text("after op 7"))
    dc.user_message(USER, "again")
    assert _final(dc, dc.dm_channel(USER), "after op 7")
    assert len(dc.identifies) == 1 and len(dc.resumes) == 1


def test_an_invalid_session_identifies_afresh(bot, dc, fake):
    dev = bot()
    dc.invalidate_session(resumable=False)
    dev.expect(r"Discord: invalid session \(identifying afresh\)", timeout=30)
    dev.expect(r"Discord: connected as board-bot", timeout=30)
    fake.script(text("a new session"))
    assert dc.wait_for(lambda: dc.connected, 20)
    dc.user_message(USER, "hello?")
    assert _final(dc, dc.dm_channel(USER), "a new session")
    assert len(dc.identifies) == 2 and not dc.resumes


def test_a_429_on_send_is_honoured(bot, dc, fake):
    bot()
    dc.rate_limit_next_send(retry_after=2.0)
    reply = " ".join(["patience"] * 30)
    fake.script(text(reply))
    dc.user_message(USER, "quick")
    assert _final(dc, dc.dm_channel(USER), reply)
    throttle = dc.throttles[0]
    assert throttle["limited_at"] is not None and throttle["too_early"] == []
    assert throttle["accepted_at"] - throttle["limited_at"] >= 2.0


def test_a_long_reply_is_split_at_2000_characters(bot, dc, fake):
    bot()
    paragraphs = ["Paragraph {} ".format(i) + "x" * 700 for i in range(6)]
    reply = "\n\n".join(paragraphs)
    fake.script(text(reply, chunk=400))
    dc.user_message(USER, "long please")
    channel = dc.dm_channel(USER)
    done = dc.wait_for(lambda: len(dc.sent(channel)) >= 3 and
                       re.sub(r"\s+", "", "".join(m["content"] for m in dc.sent(channel))) == re.sub(r"\s+", "", reply),
                       60)
    assert done
    assert all(len(m["content"]) <= 2000 for m in dc.sent(channel))
    time.sleep(1)
    assert len(dc.sent(channel)) == 3


def test_a_photo_reaches_claude_as_an_image(bot, dc, fake):
    import base64

    from host_sim.telegram_files import jpeg_bytes

    bot()
    photo = jpeg_bytes(20 * 1024, b"\x24" * 64)
    fake.script(text("A photo of something."))
    dc.user_message(USER, "what is this?", attachments=[{"filename": "cat.jpg", "data": photo,
                                                           "content_type": "image/jpeg", "width": 64, "height": 48}])
    assert _final(dc, dc.dm_channel(USER), "A photo of something.")
    request = fake.wait_requests(1, timeout=10)[0]
    blocks = request["body"]["messages"][-1]["content"]
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == 1 and base64.b64decode(images[0]["source"]["data"]) == photo
    assert "what is this?" in json.dumps(blocks) and request["status"] == 200


def test_a_servers_channel_is_answered_only_when_the_bot_is_mentioned(bot, dc, fake):
    bot()
    guild, channel = dc.add_guild()
    fake.script(text("Mentioned, so I answer."))
    dc.user_message(USER, "talking among ourselves", channel_id=channel, guild_id=guild)
    time.sleep(3)
    assert fake.requests == [] and dc.sent(channel) == []
    dc.user_message(USER, "what time is it?", channel_id=channel, guild_id=guild, mentions_bot=True)
    assert _final(dc, channel, "Mentioned, so I answer.")
    asked = json.dumps(fake.requests[0]["body"]["messages"][-1])
    assert "what time is it?" in asked and "<@" not in asked
