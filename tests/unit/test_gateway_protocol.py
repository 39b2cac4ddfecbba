# Gateway frames and token checks: what a client may send, what it gets back, who is let in.
import asyncio
import json
import os
import sys

import esp32
from mimi.settings import Config
from mimi.gateway import TOKEN_KEY, TOKEN_NS, auth, guard, protocol
from stub_app import Holder, stub_app
from support import raises, remove_tree, run, write


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
    cfg = _fresh_config()
    tokens = [auth.new_token() for _ in range(20)]
    assert len(set(tokens)) == 20
    for token in tokens:
        cfg.set(TOKEN_NS, TOKEN_KEY, token)  # the token's own rule takes every token the board makes
        assert len(token) == 24 and cfg.get(TOKEN_NS, TOKEN_KEY) == token


def test_a_new_token_must_be_long_enough_and_url_safe_and_the_error_never_quotes_it():
    cfg = _fresh_config()
    for bad in ("short", "has space in it", "slash/is/not/ok", "x" * 129):
        exc = raises(ValueError, cfg.set, TOKEN_NS, TOKEN_KEY, bad)
        assert bad not in str(exc) and "8 to 128" in str(exc)
    cfg.set(TOKEN_NS, TOKEN_KEY, "off")
    assert cfg.get(TOKEN_NS, TOKEN_KEY) == "off"
    cfg.set(TOKEN_NS, TOKEN_KEY, "my-own.token_1~")
    assert cfg.get(TOKEN_NS, TOKEN_KEY) == "my-own.token_1~"


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
    assert guard.client_role(cfg, _Request({"token": token})) == "owner"  # ws_role's default
    assert guard.client_role(cfg, _Request({"token": token + "x"})) is None
    assert guard.client_role(cfg, _Request()) is None
    cfg.set("gw_config", "ws_role", "operator")
    assert guard.client_role(cfg, _Request(headers={"Authorization": "Bearer " + token})) == "operator"


def test_off_admits_everyone_and_unset_never_does():
    cfg = _fresh_config()
    cfg.set("gw_config", "ws_token", "off")
    assert guard.client_role(cfg, _Request()) == "observer"  # ws_open_role's default
    cfg.set("gw_config", "ws_open_role", "owner")  # the owner's choice: anyone on the network is the owner
    assert guard.client_role(cfg, _Request()) == "owner"
    cfg.unset("gw_config", "ws_token")  # e.g. config_reset: a fresh token, not an open door
    assert guard.client_role(cfg, _Request()) is None
    assert auth.current(cfg) not in ("", "off")


def test_a_host_in_brackets_is_the_board_s_only_when_it_is_a_real_ipv6_address():
    cfg = _fresh_config()
    for host in ("[::1]", "[::1]:8080", "[fe80::1]", "[::]", "[2001:DB8:0:0:8:800:200C:417A]:18789", "[1::]",
                 "[::ffff:192.168.1.5]", "[64:ff9b::10.0.0.1]", "[1:2:3:4:5:6:7:8]", "[1:2:3:4:5:6::8]"):
        assert guard.host_allowed(cfg, {"Host": host}), host
    for host in ("[evil]", "[evil.example]", "[]", "[::1", "[:::1]", "[1::2::3]", "[12345::1]", "[g::1]", "[:1::2]",
                 "[1:2:3:4:5:6:7:8:9]", "[1:2:3:4:5:6:7::8]", "[1:2:3:4:5:6:7]", "[::1.2.3]", "[::1.2.3.256]",
                 "[::1.2.3.4:5]", "[1:2:3:4:5:6:7:1.2.3.4]", "[1::2]x", "[::1]:80:80"):
        assert not guard.host_allowed(cfg, {"Host": host}), host


def _port():
    return 20000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


def _idle_gateway(tag):
    """The app, its gateway made as at boot and not yet started (remove_tree(app.top) when done)."""
    from mimi.gateway import server

    app = stub_app(tag)
    app.gateway = app.add_service(app.add_channel(server.Gateway(app)))  # wired as app.py does
    app.console.commands.add_lines(server.COMMANDS)
    return app


def test_an_idle_gateway_has_no_session_code_and_still_answers_as_a_channel():
    from mimi.bus.message import Message
    from mimi.safety import confirm

    app = _idle_gateway("gw-idle")
    try:
        gateway = app.gateway
        assert app.config.get(TOKEN_NS, TOKEN_KEY)  # first boot: the token is made at once
        assert gateway.sessions is None  # gateway/clients.py waits for the first /ws request
        assert gateway.web is None  # microdot and the routes wait for the first connection
        assert app.channels["websocket"] is gateway
        question = Holder()
        question.chat_id = "ws_1"
        assert run(gateway.confirm(question, 5)) == confirm.DENIED  # nobody there to ask
        run(gateway.send(Message("websocket", "ws_1", "hi")))  # no client: dropped with a note, nothing raised
    finally:
        remove_tree(app.top)


async def _get(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write("GET {} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".format(path).encode())
    await writer.drain()
    answer = b""
    while True:
        data = await reader.read(512)
        if not data:
            break
        answer += data
    writer.close()
    await writer.wait_closed()
    return answer


def test_the_routes_load_at_the_first_connection_and_the_commands_when_one_is_typed():
    # Imported afresh, as at boot: server.py must not pull in what the first connection or command loads.
    lazy = ("mimi.gateway.server", "mimi.gateway.routes", "mimi.gateway.commands", "mimi.gateway.clients")
    saved = {name: sys.modules.pop(name) for name in lazy if name in sys.modules}
    app = _idle_gateway("gw-lazy")
    try:
        port = _port()
        app.config.set("gw_config", "ws_port", str(port))
        app.www_dir = app.top
        write(app.top + "/index.html", "<p>the web chat</p>")

        async def main():
            gateway = app.gateway
            task = asyncio.create_task(gateway.run())
            while gateway.port is None:
                await asyncio.sleep(0.02)
            assert "mimi.gateway.routes" not in sys.modules  # listening, no connection yet
            assert "mimi.gateway.commands" not in sys.modules
            answer = await _get(port, "/")
            assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"<p>the web chat</p>"), answer
            assert "mimi.gateway.routes" in sys.modules
            assert "mimi.gateway.clients" not in sys.modules  # the page only: no WebSocket session code
            await app.console.commands.execute("set_ws_token off")
            assert auth.current(app.config) == auth.OFF
            assert "mimi.gateway.commands" in sys.modules
            gateway.server.close()
            await task

        run(main())
    finally:
        for name in lazy:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        remove_tree(app.top)
