# The web chat's memory over a real WebSocket, both runtimes: a history frame on request (also after
# a power cycle), the chat's other clients see a message live, and the frame stays bounded.
import asyncio
import json

from websockets.asyncio.client import connect

from host_sim.fake_anthropic import text
from tests.e2e.conftest import free_port
from tests.e2e.gateway_client import Gateway, frame, hello, say, start, until_reply

CHAT = "web_alice1"


def _history(chat_id=CHAT):
    return json.dumps({"type": "history", "chat_id": chat_id})


async def _ask_history(url, chat_id=CHAT):
    async with connect(url) as ws:
        await hello(ws)
        await ws.send(_history(chat_id))
        return await frame(ws)


def test_history_is_sent_on_request_and_survives_a_power_cycle(boot, fake):
    port = free_port()
    gateway = Gateway(start(boot, port), port)
    fake.script(text("Hi Alice!"), text("Noted: *tea*."))

    async def talk():
        async with connect(gateway.url()) as ws, connect(gateway.url()) as other:
            await hello(ws)
            await hello(other)
            await other.send(_history())  # the second tab joins the chat: nothing in it yet
            assert await frame(other) == {"type": "history", "chat_id": CHAT, "messages": [], "more": False}
            await ws.send(say("I'm Alice, what's up?", CHAT))
            await until_reply(ws)
            seen = await until_reply(other)  # the other tab sees the message and the reply live
            assert seen[0] == {"type": "user", "content": "I'm Alice, what's up?", "chat_id": CHAT}
            assert seen[-1]["content"] == "Hi Alice!"
            await ws.send(say("I like tea", CHAT))
            await until_reply(ws)

    asyncio.run(talk())
    expected = [{"role": "user", "content": "I'm Alice, what's up?"}, {"role": "assistant", "content": "Hi Alice!"},
                {"role": "user", "content": "I like tea"}, {"role": "assistant", "content": "Noted: *tea*."}]
    got = asyncio.run(_ask_history(gateway.url()))
    assert got == {"type": "history", "chat_id": CHAT, "messages": expected, "more": False}

    gateway.device.stop()  # power cut: the history comes back from the flash
    gateway = Gateway(start(boot, port), port)
    assert asyncio.run(_ask_history(gateway.url()))["messages"] == expected
    assert asyncio.run(_ask_history(gateway.url(), "web_other"))["messages"] == []


def test_a_long_chat_sends_only_its_newest_turns(gateway, fake):
    long_reply = "x" * 7000  # four of these fit the session file (32k) but not one frame (24k)
    fake.script(*[text(long_reply) for _ in range(4)])

    async def talk():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            for n in range(4):
                await ws.send(say("turn {}".format(n), CHAT))
                await until_reply(ws)
            await ws.send(_history())
            return await frame(ws)

    got = asyncio.run(talk())
    assert got["more"] is True
    texts = [m["content"] for m in got["messages"]]
    assert texts == ["turn 1", long_reply, "turn 2", long_reply, "turn 3", long_reply]  # newest, in order
