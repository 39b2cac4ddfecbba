# Gateway frames and token checks: what a client may send, what it gets back, who is let in.
import json

import esp32
from mimi.config import Config
from mimi.gateway import auth, protocol
from support import raises


class _Request:
    def __init__(self, args=None, headers=None):
        self.args = args or {}
        self.headers = headers or {}


def _fresh_config():
    esp32.set_flash_dir(None)
    return Config()


def test_a_message_gives_its_chat_id_and_content():
    assert protocol.parse('{"type":"message","content":"Hello"}') == (None, "Hello")
    frame = json.dumps({"type": "message", "content": "Hi \u00e9", "chat_id": "web_ab-9_Z"})
    assert protocol.parse(frame) == ("web_ab-9_Z", "Hi \u00e9")


def test_bad_frames_say_what_is_wrong():
    cases = (
        ("not json", "not JSON"),
        ("[1,2]", "JSON object"),
        ('{"type":"hello","content":"x"}', "unknown type hello"),
        ('{"content":"x"}', "unknown type (none)"),
        ('{"type":"message"}', "needs text"),
        ('{"type":"message","content":" \\n "}', "needs text"),
        ('{"type":"message","content":["x"]}', "needs text"),
        ('{"type":"message","content":"x","chat_id":""}', "chat_id"),
        ('{"type":"message","content":"x","chat_id":"a b"}', "chat_id"),
        ('{"type":"message","content":"x","chat_id":7}', "chat_id"),
        (b'{"type":"message","content":"x"}', "binary"),
    )
    for data, reason in cases:
        exc = raises(protocol.BadFrame, protocol.parse, data)
        assert reason in str(exc), (data, str(exc))


def test_an_unknown_type_is_quoted_back_short():
    exc = raises(protocol.BadFrame, protocol.parse, json.dumps({"type": "x" * 500}))
    assert "x" * 32 in str(exc) and "x" * 33 not in str(exc)


def test_chat_ids_are_1_to_64_safe_characters():
    assert protocol.valid_chat_id("a")
    assert protocol.valid_chat_id("A" * 64)
    assert not protocol.valid_chat_id("A" * 65)
    for bad in ("", "a/b", "a.b", "\u00e9", "a\n", None, 3):
        assert not protocol.valid_chat_id(bad)


def test_server_frames():
    assert json.loads(protocol.token("ws_1", "Hel")) == {"type": "token", "content": "Hel", "chat_id": "ws_1"}
    assert json.loads(protocol.response("c", "All")) == {"type": "response", "content": "All", "chat_id": "c"}
    assert json.loads(protocol.error("c", "bad")) == {"type": "error", "error": "bad", "chat_id": "c"}
    assert json.loads(protocol.hello("ws_2")) == {"type": "hello", "chat_id": "ws_2"}


def test_new_tokens_are_24_url_safe_characters_and_differ():
    tokens = [auth.new_token() for _ in range(20)]
    assert len(set(tokens)) == 20
    for token in tokens:
        assert len(token) == 24 and auth.check_new(token) == token


def test_a_new_token_must_be_long_enough_and_url_safe_and_the_error_never_quotes_it():
    for bad in ("short", "has space in it", "slash/is/not/ok", "x" * 129):
        exc = raises(ValueError, auth.check_new, bad)
        assert bad not in str(exc)
    assert auth.check_new("off") == "off"
    assert auth.check_new("my-own.token_1~") == "my-own.token_1~"


def test_same_compares_whole_tokens():
    assert auth.same("abcdefgh", "abcdefgh")
    for given in ("", "abcdefg", "abcdefghi", "abcdefgX", "Xbcdefgh", "abcdabcd"):
        assert not auth.same(given, "abcdefgh"), given


def test_a_token_comes_from_the_query_or_a_bearer_header():
    assert auth.presented(_Request({"token": "q-token"})) == "q-token"
    assert auth.presented(_Request(headers={"Authorization": "Bearer h-token"})) == "h-token"
    assert auth.presented(_Request(headers={"Authorization": "bearer  h-token "})) == "h-token"
    assert auth.presented(_Request(headers={"Authorization": "Basic abc"})) is None
    assert auth.presented(_Request()) is None


def test_the_first_use_makes_and_saves_a_token_and_admits_only_it():
    cfg = _fresh_config()
    assert not cfg.is_set("gw_config", "ws_token")
    token = auth.current(cfg)
    assert cfg.get("gw_config", "ws_token") == token and auth.current(cfg) == token
    assert auth.admits(cfg, _Request({"token": token}))
    assert not auth.admits(cfg, _Request({"token": token + "x"}))
    assert not auth.admits(cfg, _Request())


def test_off_admits_everyone_and_unset_never_does():
    cfg = _fresh_config()
    cfg.set("gw_config", "ws_token", "off")
    assert auth.admits(cfg, _Request())
    cfg.unset("gw_config", "ws_token")  # e.g. config_reset: a fresh token, not an open door
    assert not auth.admits(cfg, _Request())
    assert auth.current(cfg) not in ("", "off")


class _Stub:
    pass


def _idle_gateway(config):
    from mimi.gateway.server import Gateway

    app, commands = _Stub(), _Stub()
    app.config, app.channels, app.services = config, {}, []
    commands.table = {"status": [None]}
    commands.add = commands.add_lines = lambda *args: None
    app.console = _Stub()
    app.console.commands = commands
    return Gateway(app)


def test_an_idle_gateway_has_no_session_code_and_still_answers_as_a_channel():
    config = _fresh_config()
    gateway = _idle_gateway(config)
    assert config.get(auth.NS, auth.KEY)  # first boot: the token is made at once
    assert gateway.sessions is None  # gateway/clients.py waits for the first /ws request
    assert gateway.web is None  # microdot and the routes wait for the first connection
    question = _Stub()
    question.chat_id = "ws_1"
    from mimi.safety import confirm
    from support import run

    assert run(gateway.confirm(question, 5)) == confirm.DENIED  # nobody there to ask
    run(gateway.on_delta("ws_1", "hi"))  # no client: nothing to do, nothing raised
