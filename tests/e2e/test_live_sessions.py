# A session is only as good as its token now (issue 41): a WebSocket or MCP session opened before the gateway's
# token or a role changed gets the new rules at once: a new token (or the token switched off or on) closes every
# connection opened under the old rules with 1008 and a reason the page shows; a new ws_role or ws_open_role
# reaches every live client at once (a new hello frame names it, the owner's chats and views are gone); an MCP
# session opened with the old token is ended. A real `websockets` client, under both runtimes.
import asyncio
import json

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.e2e.gateway_client import frame, hello, refused_status, say, until_reply
from tests.e2e.test_hostile_lan import _raw, _request, _status
from host_sim.fake_anthropic import text

NEW_TOKEN = "the-owners-new-token-1"
PAGE_TOKEN = "a-page-chose-this-one-2"
WAIT_S = 20


async def _closed(ws):
    """(code, reason) of the close the server sends; frames before it are skipped."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), WAIT_S)
    except ConnectionClosed as exc:
        assert exc.rcvd is not None, "the connection dropped without a close frame"
        return exc.rcvd.code, exc.rcvd.reason


def _console(dev, line):
    return asyncio.to_thread(dev.command, line)


def test_a_new_token_closes_every_connection_opened_with_the_old_one(gateway):
    dev = gateway.device

    async def main():
        async with connect(gateway.url()) as first, connect(gateway.url()) as second:
            await hello(first)
            await hello(second)
            said = await _console(dev, "set_ws_token " + NEW_TOKEN)
            return said, await _closed(first), await _closed(second)

    said, first, second = asyncio.run(main())
    assert "saved" in said and "stay" not in said
    for code, reason in (first, second):
        assert code == 1008 and "token changed" in reason and "ws_token" in reason, (code, reason)
    assert refused_status(gateway.url()) == 401  # the old token opens nothing now
    assert refused_status(gateway.url(token=NEW_TOKEN)) is None


def test_a_page_that_sets_its_own_token_is_closed_and_cannot_take_the_board(gateway):
    # The probe's attack: a page's live session set the token to one of its own, then ws_role back to owner.
    dev = gateway.device

    async def main():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(json.dumps({"type": "set", "name": "gw_config.ws_token", "value": PAGE_TOKEN}))
            return await _closed(ws)

    code, reason = asyncio.run(main())
    assert code == 1008 and "token changed" in reason
    shown = dev.command("config_show")
    assert "gw_config.ws_token = a-pa\u2026ne-2" in shown and PAGE_TOKEN not in shown  # masked, 12 of 23 hidden


def test_a_new_role_reaches_every_live_client_at_once_and_the_owner_s_chat_is_gone(gateway, fake, flash):
    dev = gateway.device
    fake.script(text("The safe's code is noted."), text("Hello, observer."))

    async def main():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("the safe's code is 4711", "web_owner"))
            await until_reply(ws)
            said = await _console(dev, "ws_role observer")
            again = await frame(ws)
            await ws.send(json.dumps({"type": "history", "chat_id": "web_owner"}))
            history = await frame(ws)
            await ws.send(json.dumps({"type": "set", "name": "gw_config.ws_role", "value": "owner"}))
            changed = await frame(ws)
            await ws.send(say("hello", "web_owner"))
            reply = await until_reply(ws)
            return said, again, history, changed, reply

    said, again, history, changed, reply = asyncio.run(main())
    assert "now" in said
    assert again["type"] == "hello" and again["role"] == "observer", again
    assert history == {"type": "history", "chat_id": "web_owner", "messages": [], "more": False}
    assert changed["type"] == "error" and "owner's" in changed["error"]
    assert "ws_role: observer" in dev.command("ws_role")  # the page could not set it back
    assert reply[-1]["content"] == "Hello, observer."
    sessions = flash / "data" / "sessions"
    assert "hello" not in (sessions / "websocket_web_owner.jsonl").read_text()  # the owner's chat untouched
    assert "hello" in (sessions / "websocket_observer%2Eweb_owner.jsonl").read_text()


def test_switching_the_token_off_or_on_closes_the_connections_of_the_old_rules(gateway):
    # Off: a connection that showed the old token is closed (it may connect again, as ws_open_role); on again: a
    # connection that showed none is closed. ws_open_role reaches the open clients at once.
    dev = gateway.device
    origin = "http://127.0.0.1:{}".format(gateway.port)

    async def main():
        async with connect(gateway.url()) as owner:
            await hello(owner)
            await _console(dev, "set_ws_token off")
            off = await _closed(owner)
        async with connect(gateway.url(token=""), origin=origin) as open_client:
            first = await frame(open_client)
            await _console(dev, "ws_open_role operator")
            promoted = await frame(open_client)
            await _console(dev, "set_ws_token " + NEW_TOKEN)
            on = await _closed(open_client)
        return off, first, promoted, on

    off, first, promoted, on = asyncio.run(main())
    assert off[0] == 1008 and "off" in off[1], off
    assert first["type"] == "hello" and first["role"] == "observer"
    assert promoted["type"] == "hello" and promoted["role"] == "operator", promoted
    assert on[0] == 1008 and "token" in on[1], on


def _mcp_post(gw, message, token, session=None):
    body = json.dumps(message).encode()
    headers = [("Host", "127.0.0.1:{}".format(gw.port)), ("Authorization", "Bearer " + token),
               ("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"),
               ("MCP-Protocol-Version", "2025-06-18"), ("Content-Length", len(body)), ("Connection", "close")]
    if session:
        headers.append(("Mcp-Session-Id", session))
    return _raw(gw.port, _request("POST", "/mcp", headers, body))


def _session_of(answer):
    head = answer.split(b"\r\n\r\n")[0].split(b"\r\n")
    return [line.split(b":", 1)[1].strip().decode() for line in head if line.lower().startswith(b"mcp-session-id:")][0]


def _result(answer):
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])["result"]


def test_an_mcp_session_opened_with_the_old_token_is_ended_and_a_new_role_applies_at_once(gateway):
    dev = gateway.device
    opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe"}}}
    answer = _mcp_post(gateway, opening, gateway.token)
    assert _status(answer) == 200, answer
    session = _session_of(answer)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert _status(_mcp_post(gateway, ping, gateway.token, session)) == 200
    assert "saved" in dev.command("config_set mcp_config.token " + NEW_TOKEN)
    assert _status(_mcp_post(gateway, ping, gateway.token, session)) == 401  # the old token
    ended = _mcp_post(gateway, ping, NEW_TOKEN, session)
    assert _status(ended) == 404 and b"initialize again" in ended, ended  # the session went with its token
    answer = _mcp_post(gateway, opening, NEW_TOKEN)
    assert _status(answer) == 200
    session = _session_of(answer)
    remember = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"text": "the MCP client was here"}}}
    assert _result(_mcp_post(gateway, remember, NEW_TOKEN, session))["isError"]  # mcp_role observer: refused
    assert "saved" in dev.command("mcp_role owner")
    ran = _result(_mcp_post(gateway, remember, NEW_TOKEN, session))
    assert not ran["isError"], ran  # the same session's next call acts with the new role
