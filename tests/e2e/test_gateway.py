# The WebSocket gateway from the outside: a real `websockets` client against the booted firmware.
import asyncio
import json
import pathlib
import socket
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from host_sim.fake_anthropic import text
from tests.e2e.conftest import free_port
from tests.e2e.gateway_client import (  # noqa: F401  (listening, token_of: the browser tests take them from here)
    Gateway, frame, hello, listening, refused_status, say, session_lines, start, token_of, until_reply)

def test_a_message_streams_token_frames_then_the_response_and_is_saved(gateway, fake, flash):
    reply = "Hello from **Mimi**, streaming in small pieces."
    fake.script(text(reply, chunk=5, delay=0.05))

    async def chat():
        async with connect(gateway.url()) as ws:
            chat_id = await hello(ws)
            await ws.send(say("hi gateway"))
            return chat_id, await until_reply(ws)

    chat_id, frames = asyncio.run(chat())
    assert chat_id == "ws_1"
    tokens = [f for f in frames if f["type"] == "token"]
    assert len(tokens) >= 5 and frames[:-1] == tokens
    assert "".join(f["content"] for f in tokens) == reply
    assert frames[-1] == {"type": "response", "content": reply, "chat_id": "ws_1"}
    assert all(f["chat_id"] == "ws_1" for f in tokens)
    assert session_lines(flash, "ws_1") == [("user", "hi gateway"), ("assistant", reply)]


def test_a_named_chat_id_is_used_and_kept_and_a_bad_one_is_refused(gateway, fake, flash):
    fake.script(text("First."), text("Second."))

    async def chat():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("one", chat_id="kitchen-1"))
            first = await until_reply(ws)
            await ws.send(say("two"))  # no chat_id: stays in kitchen-1
            second = await until_reply(ws)
            await ws.send(say("three", chat_id="no spaces!"))
            bad = await frame(ws)
            return first[-1], second[-1], bad

    first, second, bad = asyncio.run(chat())
    assert first == {"type": "response", "content": "First.", "chat_id": "kitchen-1"}
    assert second == {"type": "response", "content": "Second.", "chat_id": "kitchen-1"}
    assert bad["type"] == "error" and "chat_id" in bad["error"]
    assert session_lines(flash, "kitchen-1") == [
        ("user", "one"), ("assistant", "First."), ("user", "two"), ("assistant", "Second.")]
    assert len(fake.requests) == 2  # the bad chat_id never reached the agent


def test_no_token_or_a_wrong_one_is_refused_with_401_before_the_upgrade(gateway):
    assert refused_status(gateway.url(token="")) == 401
    assert refused_status(gateway.url(token="x" + gateway.token)) == 401
    assert refused_status(gateway.url(token=""), additional_headers={"Authorization": "Bearer wrong-token"}) == 401
    status, headers, body = gateway.http("/ws")
    assert status == 401 and b"token" in body
    assert gateway.token not in gateway.device.output.split("gateway token:")[0]  # shown only by ws_token

    async def bearer():
        async with connect(gateway.url(token=""),
                           additional_headers={"Authorization": "Bearer " + gateway.token}) as ws:
            return await hello(ws)

    assert asyncio.run(bearer()).startswith("ws_")


def test_bad_frames_get_error_frames_and_the_connection_keeps_working(gateway, fake):
    fake.script(text("Still here."))
    bad_frames = [
        "this is not JSON",
        json.dumps(["a", "list"]),
        json.dumps({"type": "subscribe", "content": "x"}),
        json.dumps({"content": "no type"}),
        json.dumps({"type": "message"}),
        json.dumps({"type": "message", "content": "   "}),
        json.dumps({"type": "message", "content": 42}),
        b"\x00\x01binary",
    ]

    async def chat():
        async with connect(gateway.url()) as ws:
            chat_id = await hello(ws)
            errors = []
            for bad in bad_frames:
                await ws.send(bad)
                errors.append(await frame(ws))
            await ws.send(say("and now a real one"))
            return chat_id, errors, await until_reply(ws)

    chat_id, errors, frames = asyncio.run(chat())
    for error in errors:
        assert error["type"] == "error" and error["chat_id"] == chat_id and error["error"]
    assert "JSON" in errors[0]["error"] and "subscribe" in errors[2]["error"]
    assert frames[-1]["content"] == "Still here."
    assert len(fake.requests) == 1


def test_an_oversize_message_closes_the_connection_with_1009(gateway, fake):
    async def chat():
        async with connect(gateway.url(), max_size=None) as ws:
            await hello(ws)
            await ws.send(say("x" * 100_000))
            try:
                while True:
                    await frame(ws)
            except ConnectionClosed as exc:
                return exc.rcvd.code if exc.rcvd else None

    assert asyncio.run(chat()) == 1009
    assert len(fake.requests) == 0

    async def again():  # the gateway itself is fine
        async with connect(gateway.url()) as ws:
            return await hello(ws)

    assert asyncio.run(again()).startswith("ws_")


def test_the_fifth_client_is_refused_and_a_freed_place_is_reused(gateway):
    async def crowd():
        clients = []
        for _ in range(4):
            ws = await connect(gateway.url())
            await hello(ws)
            clients.append(ws)
        try:
            await connect(gateway.url())
            fifth = None
        except InvalidStatus as exc:
            fifth = exc.response.status_code
        await clients.pop().close()
        for _ in range(50):  # the gateway sees the close a moment later
            try:
                ws = await connect(gateway.url())
                break
            except InvalidStatus:
                await asyncio.sleep(0.1)
        late = await hello(ws)
        clients.append(ws)
        for ws in clients:
            await ws.close()
        return fifth, late

    fifth, late = asyncio.run(crowd())
    assert fifth == 503
    assert late == "ws_5"
    assert "refused a client" in gateway.device.output


def test_two_clients_get_their_own_chats_and_a_shared_chat_reaches_both(gateway, fake):
    async def chat():
        async with connect(gateway.url()) as a, connect(gateway.url()) as b:
            ids = (await hello(a), await hello(b))
            fake.script(text("For A only."))
            await a.send(say("I am A"))
            reply_a = await until_reply(a)
            fake.script(text("For both."))
            await b.send(say("join", chat_id="shared"))
            await a.send(json.dumps({"type": "nope", "chat_id": "shared"}))  # a stays in its own chat
            not_joined = await frame(a)
            reply_b = await until_reply(b)
            fake.script(text("Both again."))
            await a.send(say("me too", chat_id="shared"))
            return ids, reply_a[-1], not_joined, reply_b[-1], await until_reply(a), await until_reply(b)

    ids, reply_a, not_joined, reply_b, both_a, both_b = asyncio.run(chat())
    assert ids == ("ws_1", "ws_2")
    assert reply_a == {"type": "response", "content": "For A only.", "chat_id": "ws_1"}
    assert not_joined["type"] == "error" and not_joined["chat_id"] == "ws_1"
    assert reply_b == {"type": "response", "content": "For both.", "chat_id": "shared"}
    assert both_a[-1] == both_b[-1] == {"type": "response", "content": "Both again.", "chat_id": "shared"}


def test_a_reply_for_a_client_that_left_is_dropped_with_a_note_and_saved(gateway, fake, flash):
    fake.script(text("You already left.", chunk=3, delay=0.2))

    async def leave():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("answer slowly", chat_id="gone"))
            await frame(ws)  # the first token: the turn is under way

    asyncio.run(leave())
    gateway.device.expect("reply for gone dropped")
    assert session_lines(flash, "gone")[-1] == ("assistant", "You already left.")
    gateway.device.command("status")  # the firmware is still fine


def test_token_commands_change_disable_and_keep_the_token(boot, fake, flash):
    port = free_port()
    dev = start(boot, port)
    gateway = Gateway(dev, port)
    first = gateway.token
    assert len(first) >= 24
    assert first not in dev.command("config_show")
    dev.stop()
    dev = start(boot, port)  # a power cycle keeps it
    assert token_of(dev) == first
    out = dev.command("set_ws_token short")
    assert "error" in out and "short" not in out.replace("set_ws_token short", "")
    dev.command("set_ws_token my-own-token-123")
    assert refused_status(gateway.url(token=first)) == 401
    assert refused_status(gateway.url(token="my-own-token-123")) is None
    dev.command("set_ws_token off")
    assert "off" in dev.command("ws_token")
    assert refused_status(gateway.url(token="")) is None
    dev.command("config_reset")  # no token at all: a new one is made, never an open door
    assert refused_status(gateway.url(token="")) == 401
    fresh = token_of(dev)
    assert fresh not in (first, "off") and refused_status(gateway.url(token=fresh)) is None


def test_set_ws_port_is_saved_and_moves_the_gateway_at_once(boot, fake):
    first, second, third = free_port(), free_port(), free_port()
    dev = start(boot, first)
    out = dev.command("set_ws_port {}".format(second))
    assert "(saved; the gateway moves now" in out  # over the runner's --ws-port too (issue 43)
    listening(dev, second)
    dev.stop()
    dev = boot(own_ws_port=False)  # started without --ws-port: the saved port applies
    listening(dev, second)
    gateway = Gateway(dev, second)
    assert refused_status(gateway.url()) is None
    dev.command("set_ws_port {}".format(third))
    dev.expect(r"gateway: web chat on http://\S+:{}/".format(third))
    assert refused_status(Gateway(dev, third).url()) is None
    deadline = time.monotonic() + 5
    while True:  # the old port is closed
        try:
            socket.create_connection(("127.0.0.1", second), timeout=1).close()
        except OSError:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_the_page_is_served_at_the_root(gateway):
    status, headers, body = gateway.http("/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"<title>Mimi</title>" in body and body.rstrip().endswith(b"</html>")
    shipped = (pathlib.Path(__file__).parents[2] / "firmware" / "www" / "index.html").read_bytes()
    assert body == shipped  # whole, as built (its size is the bundle's budget: make bundle, 24 KB gzipped)
    assert gateway.http("/nothing-here")[0] == 404


def test_after_a_restart_the_gateway_is_back_on_its_port_with_the_same_token(gateway, fake):
    token = gateway.token
    gateway.device.send("restart")
    gateway.device.expect("--- reset ---")
    gateway.device.expect(r"gateway: web chat on http://\S+:{}/".format(gateway.port))
    assert token_of(gateway.device) == token
    fake.script(text("Back again."))

    async def chat():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("are you back?"))
            return await until_reply(ws)

    assert asyncio.run(chat())[-1]["content"] == "Back again."


def test_a_tool_round_shows_a_tool_frame_between_tokens(gateway, fake):
    from host_sim.fake_anthropic import tool_use

    fake.script(tool_use("get_current_time", {}, text="Let me look."), text("It is time."))

    async def go():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(json.dumps({"type": "message", "content": "what time is it?"}))
            return await until_reply(ws)

    frames = asyncio.run(go())
    kinds = [f["type"] for f in frames]
    assert "tool" in kinds and kinds[-1] == "response"
    tool_at = kinds.index("tool")
    assert frames[tool_at]["name"] == "get_current_time"
    assert "token" in kinds[:tool_at] and "token" in kinds[tool_at:]
    assert frames[-1]["content"] == "Let me look.\n\nIt is time."
