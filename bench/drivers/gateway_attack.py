# The heap one unauthenticated connection can hold on the gateway (issue 32): a request head that stops just
# short of the caps (48 header lines, 8 KB, 2 KB of kept values) and waits, 1,500 headers sent at once, ten POSTs
# without a token to /upload and /mcp that each announce a 16 KB body and send half of it (issue 41), and, with
# the token off, a WebSocket client whose message is 63 empty fragments that never ends. Each figure is the heap
# held with the connection open and silent, above the board with its web server and WebSocket code loaded.
# MicroPython, any firmware form (ROMFS: the images are not counted).
#   micropython -X heapsize=N bench/drivers/gateway_attack.py LIB FLASH API_URL API_KEY WS_PORT TOKEN
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT, TOKEN = sys.argv[1:7]
common.use_firmware(LIB)
common.mark_host()

import asyncio  # noqa: E402
import gc  # noqa: E402
import os  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402

SETTLE_S = 0.3
_UPGRADE = "GET /ws{} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"


def held():
    gc.collect()
    return gc.mem_alloc() - common.IMAGE_COST[0]


async def _answer(reader):
    """Everything the server sends until it closes (or is quiet for 3 s)."""
    data = b""
    try:
        while True:
            more = await asyncio.wait_for(reader.read(512), 3)
            if not more:
                break
            data += more
    except (asyncio.TimeoutError, OSError):
        pass
    return data


async def _upgraded(token):
    reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))
    writer.write(_UPGRADE.format("?token=" + token if token else "").encode())
    await writer.drain()
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += await reader.read(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    first = await reader.read(2)  # the hello frame
    await reader.read(first[1] & 0x7F)
    return reader, writer


def _masked(opcode, fin=True):
    return bytes(((0x80 if fin else 0) | opcode, 0x80)) + os.urandom(4)


async def _close(writer):
    writer.close()
    await writer.wait_closed()
    await asyncio.sleep(SETTLE_S)


async def head_at_the_caps():
    """A head that fills the kept values (2 KB), 46 header lines in all, and half a line, then waits."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))
    lines = [b"GET /ws HTTP/1.1\r\n", b"Authorization: Bearer " + b"a" * 1000 + b"\r\n",
             b"Origin: http://" + b"o" * 990 + b"\r\n"]
    lines += [b"X-Filler-%d: v\r\n" % n for n in range(44)]
    lines.append(b"X-Half-Line: " + b"h" * 1900)  # no end: the line buffer full, the head not done
    for line in lines:
        writer.write(line)
    await writer.drain()
    await asyncio.sleep(SETTLE_S)
    return reader, writer


async def many_headers():
    """1,500 headers at once (the attack that once held 342 KB): the answer, and the peak on the way."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))
    writer.write(b"GET /ws HTTP/1.1\r\n")
    for n in range(1500):
        writer.write(b"X-H%d: v\r\n" % n)
    await writer.drain()
    answer = await _answer(reader)
    await _close(writer)
    return answer.split(b"\r\n", 1)[0].decode()


_BODIES = 10  # the probe's ten POSTs
_BODY_LENGTH = 16384  # what each announces: microdot's Request.max_body_length, a body it would read whole


async def bodies_without_a_token():
    """Ten POSTs without a token, half to /upload and half to /mcp, each a head that announces a 16 KB body and
    half of that body, held open: (the heap held for each, their answers' status lines)."""
    base = held()
    connections = []
    for n in range(_BODIES):
        path = b"/upload?name=a.txt" if n % 2 else b"/mcp"
        reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))
        writer.write(b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % _BODY_LENGTH)
        writer.write(b"x" * (_BODY_LENGTH // 2))
        await writer.drain()
        connections.append((reader, writer))
    await asyncio.sleep(SETTLE_S)
    each = (held() - base) / _BODIES
    statuses = []
    for reader, writer in connections:
        answer = await _answer(reader)
        statuses.append(answer.split(b"\r\n", 1)[0].decode())
        await _close(writer)
    return each, statuses


async def main(app):
    runner = asyncio.create_task(app.main())
    await asyncio.sleep(SETTLE_S)
    reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))  # the web server, as a first visit
    writer.write(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    await _answer(reader)
    await _close(writer)
    reader, writer = await _upgraded(TOKEN)  # the WebSocket code, as the web chat's first client
    await _close(writer)
    base = held()

    reader, writer = await head_at_the_caps()
    head_held = held() - base
    await _close(writer)

    sampler = common.Sampler()
    task = asyncio.create_task(sampler.run())
    base = held()
    status = await many_headers()
    sampler.running = False
    await task
    many_peak = sampler.peak - common.IMAGE_COST[0] - base

    app.config.set("gw_config", "ws_token", "off")  # a client without a token gets its WebSocket
    base = held()
    reader, writer = await _upgraded(None)
    connected = held() - base
    writer.write(_masked(1, fin=False))
    for _ in range(63):
        writer.write(_masked(0, fin=False))
    await writer.drain()
    await asyncio.sleep(SETTLE_S)
    fragments_held = held() - base
    writer.write(_masked(0, fin=False))  # the 65th frame of the message
    await writer.drain()
    closed = await _answer(reader)
    code = (closed[2] << 8) | closed[3] if len(closed) >= 4 and closed[0] & 0x0F == 8 else None
    await _close(writer)

    # Last: twenty sockets open at once grow the event loop's tables for good, which would move later baselines.
    app.config.set("gw_config", "ws_token", TOKEN)
    bodies_held, body_statuses = await bodies_without_a_token()
    runner.cancel()
    common.report({"head_held": head_held, "many_headers_peak": many_peak, "many_headers_status": status,
                   "bodies_held": bodies_held, "bodies_statuses": body_statuses,
                   "client_held": connected, "fragments_held": fragments_held, "fragments_close": code,
                   "ok": status.startswith("HTTP/1.1 431") and code == 1009
                   and all(" 401 " in line + " " for line in body_statuses)})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"  # certificates and pages
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
    www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY),
               ("gw_config", "ws_port", PORT)])
firmware.config.set("gw_config", "ws_token", TOKEN)
asyncio.run(main(firmware))
