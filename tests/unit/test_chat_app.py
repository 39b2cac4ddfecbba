# The chat-app base (channels/chat_app.py) Matrix and Discord share: who may talk, strangers, /new and /help,
# yes/no confirmations, streamed edits, rate limits and the outbox that resends under the same key.
import asyncio

from stub_app import stub_app
from support import raises, remove_tree, run

from mimi.bus.message import MATRIX, Message
from mimi.channels.chat_app import ChatApp, RateLimited, parse_users
from mimi.net import http
from mimi.safety import roles


class App(ChatApp):
    """A chat app whose messages go to a list; `fail` holds outcomes for the next posts (an exception or None)."""

    name = MATRIX
    title = "Matrix"
    ns = "mx_config"
    allow_cmd = "matrix_allow"
    outbox_file = "mx_outbox.json"
    edit_every_ms = 50
    limit = 100

    def __init__(self, app):
        super().__init__(app)
        self.posts, self.edits, self.fail = [], [], []

    async def post(self, chat_id, html, plain, notice, key):
        outcome = self.fail.pop(0) if self.fail else None
        if outcome is not None:
            raise outcome
        self.posts.append((chat_id, plain, notice, key))
        return "m{}".format(len(self.posts))

    async def edit(self, chat_id, message_id, html, plain):
        self.edits.append((chat_id, message_id, plain))

    async def typing(self, chat_id):
        pass


def _app(tag):
    app = stub_app(tag)
    app.sessions = None
    return app


def test_users_and_roles_live_in_the_allow_setting():
    app = _app("chat_users")
    try:
        chat = App(app)
        assert chat.allow("@ann:hs", "owner") == 1 and chat.allow("@bob:hs") == 2
        assert app.config.get("mx_config", "allow") == "@ann:hs=owner,@bob:hs=operator"
        assert chat.role_of("@ann:hs") == "owner" and chat.role_of("@eve:hs") is None
        assert chat.owners() == ["@ann:hs"]
        assert chat.deny("@bob:hs") and not chat.deny("@bob:hs")
        assert parse_users("x=owner, bad, y=king, z=observer") == [["x", "owner"], ["z", "observer"]]
    finally:
        remove_tree(app.top)


def test_a_direct_chat_has_its_users_trust_and_any_other_chat_the_least():
    app = _app("chat_direct")
    try:
        chat = App(app)
        chat.allow("@ann:hs", "owner")
        room = "!" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg"  # a random room id: no key-shaped setting
        chat.remember_direct(room, "@ann:hs")
        assert roles.of_chat(app.config, MATRIX, room) == roles.OWNER
        assert roles.of_chat(app.config, MATRIX, "!other") == roles.OBSERVER
        assert room not in app.config.get("mx_config", "direct")
        chat.deny("@ann:hs")
        assert roles.of_chat(app.config, MATRIX, room) == roles.OBSERVER
    finally:
        remove_tree(app.top)


def test_a_stranger_is_told_their_id_once_and_nothing_reaches_the_agent():
    app = _app("chat_stranger")
    try:
        chat = App(app)
        assert run(chat.incoming("@eve:hs", "!r", "hello")) is True
        told = " ".join(p[1] for p in chat.posts)
        assert run(chat.incoming("@eve:hs", "!r", "hello again")) is True
        assert " ".join(p[1] for p in chat.posts) == told  # once a boot
        assert "id is @eve:hs" in told and "matrix_allow @eve:hs" in told
        assert all(p[2] is True for p in chat.posts)  # the board's own words: notices
        assert app.bus.inbound.qsize() == 0
    finally:
        remove_tree(app.top)


def test_an_allowed_message_reaches_the_agent_with_the_users_role():
    app = _app("chat_allowed")
    try:
        chat = App(app)
        chat.allow("@ann:hs", "observer")
        assert run(chat.incoming("@ann:hs", "!r", " what time is it? ", {"event": "$e1"})) is False
        message = app.bus.inbound.get_nowait()
        assert message.channel == MATRIX and message.chat_id == "!r" and message.text == "what time is it?"
        assert message.meta == {"event": "$e1", "user_id": "@ann:hs", "role": "observer"}
        assert run(chat.incoming("@ann:hs", "!r", "/help")) is True and "/new" in chat.posts[-1][1]
    finally:
        remove_tree(app.top)


def test_a_reply_streams_into_one_message_then_ends_as_an_edit_of_it():
    app = _app("chat_stream")
    try:
        chat = App(app)

        async def turn():
            await chat.on_start("!r")
            for word in ("Hello ", "there, ", "friend."):
                await chat.on_delta("!r", word)
                await asyncio.sleep(0.12)
            await chat.send(Message(MATRIX, "!r", "Hello there, friend.", {"kind": "reply"}))

        run(turn())
        assert len(chat.posts) == 1 and chat.posts[0][1].startswith("Hello")
        assert chat.edits[-1] == ("!r", "m1", "Hello there, friend.") and chat.answered == 1
    finally:
        remove_tree(app.top)


def test_a_long_reply_is_split_at_the_limit():
    app = _app("chat_split")
    try:
        chat = App(app)
        text = "\n\n".join("paragraph {} ".format(i) + "x" * 60 for i in range(4))
        run(chat.send(Message(MATRIX, "!r", text, {"kind": "reply"})))
        assert len(chat.posts) == 4 and all(len(p[1]) <= 100 for p in chat.posts)
    finally:
        remove_tree(app.top)


def test_a_rate_limit_is_waited_out_and_the_message_sent_once():
    app = _app("chat_rate")
    try:
        chat = App(app)
        chat.fail = [RateLimited(0.2)]
        run(chat.send(Message(MATRIX, "!r", "patience", {"kind": "reply"})))
        assert [p[1] for p in chat.posts] == ["patience"] and not chat.outbox
    finally:
        remove_tree(app.top)


def test_an_undelivered_reply_waits_on_flash_and_goes_out_later_under_the_same_key():
    app = _app("chat_outbox")
    try:
        chat = App(app)
        chat.retry_s = 0
        down = http.HTTPError("the homeserver answered 502")
        chat.fail = [http.NotSent("cannot reach hs:443 (connection refused)")]
        chat.transient = lambda exc: False  # no patience: straight to the outbox
        run(chat.send(Message(MATRIX, "!r", "kept for later", {"kind": "reply"})))
        assert chat.posts == [] and len(chat.outbox) == 1
        key = chat.outbox[0]["parts"][0][2]
        again = App(app)  # after a reboot: the file brings it back
        assert len(again.outbox) == 1 and again.outbox[0]["parts"][0][2] == key
        again.fail = [down]

        async def deliver():
            task = asyncio.create_task(again.run_outbox())
            for _ in range(100):
                await asyncio.sleep(0.05)
                if again.posts:
                    break
            task.cancel()

        again.retry_s = 0.1
        run(deliver())
        assert [(p[1], p[3]) for p in again.posts] == [("kept for later", key)] and again.outbox == []
        assert App(app).outbox == []
    finally:
        remove_tree(app.top)


def test_yes_or_no_answers_the_open_question_of_that_chat():
    from mimi.safety import confirm

    app = _app("chat_confirm")
    try:
        chat = App(app)
        chat.allow("@ann:hs", "owner")
        chat.allow("@bob:hs", "observer")
        app.policy = type("Policy", (), {})()
        app.policy.questions = confirm.Questions()
        question = app.policy.questions.ask("gpio_write", "{}", MATRIX, "!r", None, "operator")

        async def ask():
            asking = asyncio.create_task(chat.confirm(question, 5))
            await asyncio.sleep(0.05)
            assert await chat.incoming("@bob:hs", "!r", "yes") is False  # an observer may not: a message then
            assert await chat.incoming("@ann:hs", "!r", "Yes") is True
            return await asking

        assert run(ask()) == confirm.APPROVED
        assert "May I run gpio_write" in chat.posts[0][1] and "yes or no" in chat.posts[0][1]
        assert chat.posts[-1][1] == confirm.OUTCOME_SHOWN[confirm.APPROVED]
    finally:
        remove_tree(app.top)


def test_a_user_id_is_checked_at_the_console():
    from mimi.matrix import commands

    assert raises(ValueError, commands._check_user, "alice")
    assert raises(ValueError, commands._check_user, "@alice:hs=owner")
    commands._check_user("@alice:matrix.org")


def test_a_board_without_a_login_or_a_token_loads_neither_app():
    import sys

    for name in ("mimi.matrix.channel", "mimi.discord.channel"):  # another test may have loaded them
        sys.modules.pop(name, None)
    app = stub_app("chat_parts", parts=True)
    try:
        app.matrix = app.discord = None
        app.sessions = None
        assert app.part("matrix") is None and app.part("discord") is None
        assert "mimi.matrix.channel" not in sys.modules and "mimi.discord.channel" not in sys.modules
        app.config.set("mx_config", "homeserver", "https://matrix.example.org")
        app.config.set("mx_config", "token", "syt_bWltaQ_secret_token_value")
        made = app.part("matrix")
        assert made is app.matrix and app.channels["matrix"] is made and made in app.services
        assert app.part("discord") is None
    finally:
        remove_tree(app.top)


def test_new_starts_a_fresh_conversation_in_that_room_only():
    from mimi.storage.sessions import Sessions

    app = _app("chat_new")
    try:
        app.sessions = Sessions(app.flash.sessions_dir)
        chat = App(app)
        chat.allow("@ann:hs", "owner")
        for room in ("!abc:hs", "!other:hs"):
            app.sessions.append(MATRIX, room, "user", "hello from " + room)
        assert run(chat.incoming("@ann:hs", "!abc:hs", "/new")) is True
        assert chat.posts[-1][1] == "Started a fresh conversation."
        assert not app.sessions.exists(MATRIX, "!abc:hs") and app.sessions.exists(MATRIX, "!other:hs")
        assert run(chat.incoming("@ann:hs", "!abc:hs", "/new")) is True
        assert chat.posts[-1][1] == "This conversation is already fresh."
    finally:
        remove_tree(app.top)
