# The gateway under rough clients: silent sockets, clients that vanish mid-reply, many short visits.
import asyncio
import re
import socket
import time

from websockets.asyncio.client import connect

from host_sim.fake_anthropic import text
from tests.e2e.gateway_client import frame, hello, say, session_lines, until_reply

REQUEST_TIMEOUT_S = 10  # firmware/mimi/gateway/web.py REQUEST_TIMEOUT_S
HANG_UP_SLACK_S = 5  # the server's timer, its loop and this machine's load on top of the timeout
SILENT_CLIENTS = 3
CYCLES = 200
# After 200 connect/hello/close cycles and a collection, MicroPython's free heap may differ from
# before by fragmentation and small caches (chat ids, interned strings), not by anything that grows
# with the number of clients: 200 leaked clients would hold far more (well over 100 KB).
HEAP_MARGIN_BYTES = 16 * 1024


async def chat_once(gateway, content="hello"):
    async with connect(gateway.url()) as ws:
        chat_id = await hello(ws)
        await ws.send(say(content))
        return chat_id, await until_reply(ws)


def free_heap(device):
    """Free heap bytes after a collection, or None where the runtime does not measure it."""
    match = re.search(r"heap: (\d+) bytes free", device.command("heap_info"))
    return int(match.group(1)) if match else None


def test_silent_connections_are_hung_up_after_the_timeout_and_delay_no_one(gateway, fake):
    fake.script(text("Still here for you."))
    silent = []
    for index in range(SILENT_CLIENTS):
        sock = socket.create_connection(("127.0.0.1", gateway.port), timeout=10)
        if index == 0:
            sock.sendall(b"GET /ws HTT")  # half a request line, then nothing
        silent.append(sock)
    opened = time.monotonic()

    chat_id, frames = asyncio.run(chat_once(gateway))
    assert frames[-1] == {"type": "response", "content": "Still here for you.", "chat_id": chat_id}
    assert time.monotonic() - opened < REQUEST_TIMEOUT_S / 2  # served at once, not after the silent ones

    for sock in silent:
        sock.settimeout(REQUEST_TIMEOUT_S + HANG_UP_SLACK_S - (time.monotonic() - opened))
        assert sock.recv(64) == b""  # closed by the server, with no answer
        assert time.monotonic() - opened >= REQUEST_TIMEOUT_S - 1  # ... and not before the timeout
        sock.close()
    gateway.device.expect(r"gateway: a client sent no complete request within {} s; hung up".format(
        REQUEST_TIMEOUT_S))
    asyncio.run(chat_once(gateway))  # still serving


def test_a_client_that_drops_mid_reply_does_not_stop_the_turn(gateway, fake, flash):
    reply = "A long answer that keeps streaming after you left."
    fake.script(text(reply, chunk=4, delay=0.1), text("Welcome back."))

    async def drop_mid_reply():
        ws = await connect(gateway.url())
        chat_id = await hello(ws)
        await ws.send(say("tell me slowly"))
        assert (await frame(ws))["type"] == "token"  # the reply is streaming
        ws.transport.abort()  # gone: no closing handshake
        return chat_id

    chat_id = asyncio.run(drop_mid_reply())
    dev = gateway.device
    dev.expect(r"gateway: {} disconnected".format(chat_id))
    dev.expect(r"reply for {} dropped".format(chat_id))
    assert session_lines(flash, chat_id)[-2:] == [("user", "tell me slowly"), ("assistant", reply)]

    new_id, frames = asyncio.run(chat_once(gateway, "are you there?"))
    assert frames[-1] == {"type": "response", "content": "Welcome back.", "chat_id": new_id}
    assert "Traceback" not in dev.output
    assert "Agent: 2 turns, 0 failed" in dev.command("status")


def test_many_connect_disconnect_cycles_leak_no_client_or_memory(gateway, fake):
    async def cycles(count):
        for _ in range(count):
            async with connect(gateway.url()) as ws:
                await hello(ws)

    dev = gateway.device
    asyncio.run(chat_once(gateway))  # warm up: every module a chat and a visit need is loaded...
    asyncio.run(cycles(5))
    dev.command("status")  # ...and the status command's, which this test reads below (its health and OTA lines
    # import the HTTP client, which a board without PSRAM lets go after each model call: about 20 KB as .mpy)
    before = free_heap(dev)

    asyncio.run(cycles(CYCLES))
    idle = r"Gateway: listening on port {}, 0 of 4 clients".format(gateway.port)
    deadline = time.monotonic() + 5  # the last visit's server side may still be closing
    while not re.search(idle, dev.command("status")) and time.monotonic() < deadline:
        time.sleep(0.1)
    after = free_heap(dev)

    if before is not None:  # MicroPython: the heap is measured
        assert after >= before - HEAP_MARGIN_BYTES, (before, after)
    status = dev.command("status")
    assert re.search(idle, status), status
    chat_id, frames = asyncio.run(chat_once(gateway, "still fine?"))
    assert frames[-1]["type"] == "response" and frames[-1]["chat_id"] == chat_id
    assert "Traceback" not in dev.output


def _raw_request(port, payload):
    """The status line the gateway answers to raw bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(payload)
        return sock.recv(64).split(b"\r\n")[0]


def test_malformed_requests_get_400_and_one_console_line_each(gateway):
    start = len(gateway.device.output)
    for payload in (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"GET / HTTP/1.1\r\nX-Long: " + b"b" * 3000 + b"\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: x\r\nX-Bad: \xff\xfe\xed\xa0\x80\r\n\r\n",
                    b"\xff\xfe garbage\r\n\r\n"):
        assert _raw_request(gateway.port, payload).split(b" ")[1] == b"400"
    for reason in ("over 2048 bytes", "over 2048 bytes", "not UTF-8", "not UTF-8"):
        gateway.device.expect(r"gateway: answered 400 to a malformed request \([^)]*{}\)".format(reason))
    printed = gateway.device.output[start:]
    assert "Traceback" not in printed and "microdot.py" not in printed
    assert "status" in gateway.device.command("help")  # the console still answers
