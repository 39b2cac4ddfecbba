# A reply that cannot leave the device (WiFi down) is sent again; one that may have arrived is not repeated.
from support import NotImported, imported, raises, read, remove_tree, run, tempdir, write

from mimi.net import http
from mimi.telegram import outbox
from mimi.telegram.api import TelegramError
from mimi.telegram.outbox import Outbox, Undelivered
from mimi.telegram.sender import Sender


class ScriptedAPI:
    """Answers each call with the next scripted outcome: an exception to raise, or a result."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls = []

    async def call(self, method, params=None, read_timeout=20):
        self.calls.append((method, params.get("text") if params else None))
        outcome = self.outcomes.pop(0) if self.outcomes else {"message_id": len(self.calls)}
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def _sender(api, patience_s=1):
    sender = Sender(api)
    sender.backoff_first_s = 0.01
    sender.patience_s = patience_s
    return sender


def test_a_reply_that_never_left_the_device_is_sent_once_the_network_is_back():
    down = http.NotSent("cannot reach api.telegram.org:443 (no route to host)")
    api = ScriptedAPI(down, down, down)
    run(_sender(api).send_plain(42, "The answer."))
    assert [c for c in api.calls if c[0] == "sendMessage"] == [("sendMessage", "The answer.")] * 4


def test_a_reply_that_may_have_arrived_is_not_sent_twice():
    api = ScriptedAPI(http.HTTPError("connection to api.telegram.org closed mid-response"))
    raises(http.HTTPError, run, _sender(api).send_plain(42, "Once only."))
    assert len(api.calls) == 1


def test_telegram_server_errors_are_retried_and_a_bad_request_is_not():
    api = ScriptedAPI(TelegramError(502, "Bad Gateway"), TelegramError(500, "Internal Server Error"))
    run(_sender(api).send_plain(42, "Through."))
    assert len(api.calls) == 3
    api = ScriptedAPI(TelegramError(400, "Bad Request: chat not found"))
    exc = raises(TelegramError, run, _sender(api).send_plain(42, "Nowhere."))
    assert exc.code == 400 and len(api.calls) == 1


def test_patience_runs_out_with_the_parts_not_shown_and_the_network_error():
    down = http.NotSent("cannot reach api.telegram.org:443 (no route to host)")
    api = ScriptedAPI({"message_id": 1}, *([down] * 50))
    long_reply = "First part. " * 300 + "\n\n" + "Second part. " * 300  # two messages of at most 4096
    exc = raises(Undelivered, run, _sender(api, patience_s=0.05).reply(42, long_reply))
    assert "no route to host" in str(exc) and isinstance(exc.cause, http.NotSent) and 3 <= len(api.calls) < 50
    assert len(exc.parts) == 1 and exc.parts[0][1].startswith("Second part.")  # the first one was shown


def test_a_waiting_part_is_tried_once_per_round():
    down = http.NotSent("cannot reach api.telegram.org:443 (no route to host)")
    api = ScriptedAPI(down, TelegramError(502, "Bad Gateway"))
    sender = _sender(api)
    for _ in range(2):
        exc = raises(Undelivered, run, sender.deliver_part("42", "<b>Hi</b>", "**Hi**"))
        assert exc.parts == [("<b>Hi</b>", "**Hi**")]
    assert len(api.calls) == 2  # one call each: no backoff inside a round
    run(sender.deliver_part("42", "<b>Hi</b>", "**Hi**"))
    assert api.calls[-1] == ("sendMessage", "<b>Hi</b>")


class FakeSender:
    """Delivers into `shown` unless `down` (then Undelivered), or raises a scripted error once."""

    def __init__(self):
        self.shown, self.down, self.error = [], False, None

    async def deliver_part(self, chat_id, html, plain):
        if self.down:
            raise Undelivered([(html, plain)], http.NotSent("no route to host"))
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        self.shown.append((chat_id, plain))


def _outbox(top, sender):
    box = Outbox(top, sender)
    box.retry_s = 0.01
    return box


def test_waiting_replies_survive_a_restart_and_go_out_in_order_once_telegram_answers():
    top = tempdir("outbox")
    try:
        sender = FakeSender()
        sender.down = True
        box = _outbox(top, sender)
        box.add(42, [("<b>One</b>", "**One**"), (None, "Two")], http.NotSent("no route to host"))
        assert box.holds(42) and box.holds("42") and not box.holds(7)
        box.add(7, [(None, "Seven")])
        run(box._send_oldest())  # still down: nothing lost, nothing shown
        assert sender.shown == [] and len(box.replies) == 2
        box = _outbox(top, sender)  # a power cycle: read back from flash
        assert [r["chat"] for r in box.replies] == ["42", "7"]
        sender.down = False
        assert run(box._send_oldest()) and run(box._send_oldest())
        assert sender.shown == [("42", "**One**"), ("42", "Two"), ("7", "Seven")]
        assert box.replies == [] and box.delivered == 2
        assert _outbox(top, sender).replies == []  # and nothing is sent twice after the next restart
    finally:
        remove_tree(top)


def test_a_refused_reply_is_given_up_and_one_that_may_have_arrived_is_not_repeated():
    top = tempdir("outbox")
    try:
        sender = FakeSender()
        box = _outbox(top, sender)
        box.add(42, [(None, "Blocked")])
        sender.error = TelegramError(403, "Forbidden: bot was blocked by the user")
        assert run(box._send_oldest()) and sender.shown == [] and box.replies == []
        box.add(42, [(None, "Maybe"), (None, "Surely")])
        sender.error = http.HTTPError("connection closed mid-response")
        assert run(box._send_oldest()) and sender.shown == [("42", "Surely")]
    finally:
        remove_tree(top)


def test_a_reply_pushed_out_while_it_is_being_sent_leaves_the_newer_ones_waiting():
    top = tempdir("outbox")
    try:
        box = _outbox(top, None)

        class Busy(FakeSender):
            async def deliver_part(self, chat_id, html, plain):
                for i in range(outbox.REPLIES_MAX):  # new replies arrive while this one is on its way
                    box.add(100 + i, [(None, "newer {}".format(i))])
                self.shown.append((chat_id, plain))

        box.sender = Busy()
        box.add(1, [(None, "oldest")])
        assert run(box._send_oldest()) and box.sender.shown == [("1", "oldest")]
        assert [r["chat"] for r in box.replies] == [str(100 + i) for i in range(outbox.REPLIES_MAX)]
    finally:
        remove_tree(top)


def test_the_outbox_is_bounded_and_an_unreadable_file_is_no_replies():
    top = tempdir("outbox")
    try:
        box = _outbox(top, FakeSender())
        for i in range(outbox.REPLIES_MAX + 2):
            box.add(i, [(None, "reply {}".format(i))])
        assert len(box.replies) == outbox.REPLIES_MAX and box.replies[0]["chat"] == "2"  # the oldest went
        box.add(99, [(None, "x" * 4000)] * 6)  # over the file's size: older replies make room
        assert box.replies[-1]["chat"] == "99" and len(read(box.path)) <= outbox.FILE_MAX
        write(box.path, '[{"chat": "1", "parts": [[null, "torn')
        assert _outbox(top, FakeSender()).replies == []
    finally:
        remove_tree(top)


def test_connection_refused_is_not_sent_and_a_hang_up_after_the_request_is_not_that():
    import asyncio
    import os

    port = 21000 + os.urandom(1)[0] * 16 + os.urandom(1)[0] % 16
    exc = raises(http.NotSent, run, http.request("GET", "http://127.0.0.1:{}/".format(port)))
    assert "refused" in str(exc)

    async def hang_up(reader, writer):
        await reader.read(1024)  # the whole request arrives, then the server goes away without answering
        writer.close()
        await writer.wait_closed()

    async def main():
        server = await asyncio.start_server(hang_up, "127.0.0.1", port)
        try:
            await http.request("GET", "http://127.0.0.1:{}/x".format(port))
        finally:
            server.close()
            await server.wait_closed()

    exc = raises(http.HTTPError, run, main())
    assert not isinstance(exc, http.NotSent)


class _Commands:
    def add(self, *args):
        pass

    def add_lines(self, *args):
        pass


class _Holder:
    pass


def _bare_channel(top, commands=None):
    """The Telegram channel of a board without a bot token, its flash under top (commands: the console's)."""
    import esp32
    from mimi.bus.message import Bus
    from mimi.settings import Config
    from mimi.telegram.channel import COMMANDS, Telegram

    esp32.set_flash_dir(None)
    app = _Holder()
    app.config, app.bus, app.channels, app.services = Config(), Bus(), {}, []
    app.flash = _Holder()
    app.flash.root = top
    app.console = _Holder()
    app.console.commands = _Commands() if commands is None else commands(app, app.console)
    channel = Telegram(app)  # wired as app.py does: its channel, its service, its console lines
    app.channels[channel.name] = channel
    app.services.append(channel)
    app.console.commands.add_lines(COMMANDS)
    return channel


def _telegram_channel(top, api):
    """The Telegram channel on a scripted Bot API, its flash under top."""
    channel = _bare_channel(top)
    bot = channel.bot()  # no token here: the bot is made for the test's replies
    bot.api = bot.sender.api = api
    bot.sender.backoff_first_s, bot.sender.patience_s = 0.01, 0.03
    return channel


def test_while_a_reply_waits_newer_ones_to_that_chat_queue_behind_it_and_others_go_out():
    from mimi.bus.message import Message

    top = tempdir("outbox")
    try:
        down = http.NotSent("cannot reach api.telegram.org:443 (no route to host)")
        api = ScriptedAPI(*([down] * 6))
        channel = _telegram_channel(top, api)
        run(channel.send(Message("telegram", "42", "First answer.", {})))
        box = channel.bot().outbox
        assert box.holds(42) and api.calls[-1] == ("sendMessage", "First answer.")
        api.outcomes = []  # Telegram answers again
        run(channel.send(Message("telegram", "42", "Second answer.", {})))
        run(channel.send(Message("telegram", "42", "I ran gpio_write", {"kind": "report"})))
        run(channel.send(Message("telegram", "7", "Another chat.", {})))
        sent = [text for method, text in api.calls if method == "sendMessage"]
        assert sent[-1] == "Another chat." and "Second answer." not in sent  # 42's order is kept
        assert [r["parts"][0] for r in box.replies] == [
            ["First answer.", "First answer."], ["Second answer.", "Second answer."], [None, "I ran gpio_write"]]
        while box.replies:
            assert run(box._send_oldest())
        sent = [text for method, text in api.calls if method == "sendMessage"]
        assert sent[-3:] == ["First answer.", "Second answer.", "I ran gpio_write"]
    finally:
        remove_tree(top)



def test_without_a_bot_token_the_bot_is_made_when_one_is_set_or_when_a_reply_waits_on_flash():
    top = tempdir("outbox")
    try:
        from mimi.telegram.allowlist import allowed

        channel = _bare_channel(top)
        assert channel._bot is None and allowed(channel.app.config) == []  # the allowlist needs no bot
        channel.app.config.set("tg_config", "allowlist", "42")
        assert channel._bot is None and allowed(channel.app.config) == [42]
        channel.app.config.set("tg_config", "bot_token", "123:abc")
        assert channel._bot is not None  # the poller starts with the token
        channel.app.config.unset("tg_config", "bot_token")
        box = channel.bot().outbox
        box.add(42, [[None, "Still to send."]])
        rebooted = _bare_channel(top)
        assert rebooted._bot is not None and rebooted.bot().outbox.replies  # still sent after the reboot
        box.replies = []
        box._save()  # all delivered: the file stays, empty
        assert _bare_channel(top)._bot is None
    finally:
        remove_tree(top)



def test_a_board_without_a_bot_token_loads_the_allowlist_code_at_the_first_tg_command_and_the_bot_with_a_token():
    from mimi.channels.commands import Commands
    from mimi.safety import roles

    top = tempdir("tg_idle")
    try:
        with NotImported("mimi.telegram.allowlist", "mimi.telegram.bot"):
            channel = _bare_channel(top, Commands)
            app, commands = channel.app, channel.app.console.commands
            assert [name for name in ("tg_allow", "tg_role", "tg_deny", "tg_allowlist") if name in commands.names()] \
                == ["tg_allow", "tg_role", "tg_deny", "tg_allowlist"]
            assert channel.name == "telegram" and channel.streams
            assert callable(channel.confirm)  # a channel's calls are there before the bot is made
            assert not imported("mimi.telegram.allowlist") and not imported("mimi.telegram.bot")
            run(commands.execute("tg_allow 42 owner"))
            assert app.config.get("tg_config", "allowlist") == "42" and roles.owners(app.config) == [42]
            assert imported("mimi.telegram.allowlist") and not imported("mimi.telegram.bot")
            assert channel._bot is None
            run(commands.execute("set_tg_token 123:abc"))
            assert imported("mimi.telegram.bot") and channel._bot is not None  # the poller starts with it
    finally:
        remove_tree(top)


def test_a_held_back_draft_keeps_only_its_tail_of_a_long_reply():
    # 2000 pieces arrive while the preview waits (as behind a 429 or a slow send): the stream keeps about the
    # draft's tail of them, never the whole reply, and the draft then shows that newest tail after an ellipsis.
    import asyncio

    from mimi.telegram.sender import DRAFT_TAIL

    api = ScriptedAPI()
    sender = _sender(api)
    pieces = ["piece{:04d} ".format(i) for i in range(2000)]  # 22000 characters

    async def main():
        await sender.start(42)
        await asyncio.sleep(0.05)  # the preview task has sent "typing" and waits for text
        for piece in pieces:
            await sender.delta(42, piece)
        held = sum(len(p) for p in sender._streams[42].parts)
        for _ in range(40):
            await asyncio.sleep(0.05)
            if any(c[0] == "sendMessageDraft" for c in api.calls):
                break
        await sender.stop(42)
        return held

    held = run(main())
    assert DRAFT_TAIL <= held <= DRAFT_TAIL + len(pieces[0])
    drafts = [text for method, text in api.calls if method == "sendMessageDraft"]
    assert drafts and drafts[0].startswith("\u2026") and drafts[0].endswith("piece1999 ")
    assert len(drafts[0]) <= DRAFT_TAIL + 1 and "piece1700" in drafts[0] and "piece1600" not in drafts[0]
