# The heap one MCP session costs (the board's MCP server): an MCP client in this process opens a session
# (initialize), lists the tools and calls one; the heap held then, and the peak on the way, above the board's
# with its gateway in use (the web server a first connection of any kind loads is measured apart). MicroPython,
# any firmware form (ROMFS: the images are not counted).
#   micropython -X heapsize=N bench/drivers/mcp_session.py LIB FLASH API_URL API_KEY WS_PORT TOKEN
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT, TOKEN = sys.argv[1:7]
common.use_firmware(LIB)
common.mark_host()

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402

SETTLE_S = 0.3
_PIECE = 256


async def post(body, session=None):
    """(the Mcp-Session-Id answered or None, status, body length): one request, read a piece at a time."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))
    head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n" \
           "Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n".format(TOKEN, len(body))
    if session:
        head += "Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-11-25\r\n".format(session)
    writer.write(head.encode() + b"\r\n" + body)
    await writer.drain()
    first = await reader.read(_PIECE)
    status = int(first.split(b" ", 2)[1])
    found = None
    at = first.find(b"Mcp-Session-Id: ")
    if at >= 0:
        found = first[at + 16:first.find(b"\r\n", at)].decode()
    size = len(first)
    while True:
        data = await reader.read(_PIECE)
        if not data:
            break
        size += len(data)
    writer.close()
    await writer.wait_closed()
    return found, status, size


async def get(path):
    """A plain GET (the web chat's page): the gateway's web server is loaded by it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", int(PORT))
    writer.write("GET {} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".format(path).encode())
    await writer.drain()
    while await reader.read(_PIECE):
        pass
    writer.close()
    await writer.wait_closed()


async def session():
    """initialize, the initialized notification, tools/list and a tools/call: the session id and statuses."""
    sid, opened, _ = await post(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
                                b'"2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}')
    _, noted, _ = await post(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', sid)
    _, listed, size = await post(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}', sid)
    _, called, _ = await post(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": '
                              b'"get_current_time", "arguments": {}}}', sid)
    return sid, (opened, noted, listed, called), size


def held():
    gc.collect()
    return gc.mem_alloc() - common.IMAGE_COST[0]  # the ROMFS images (mapped flash on the chip) not counted


async def main(app):
    runner = asyncio.create_task(app.main())
    await asyncio.sleep(SETTLE_S)
    idle = held()
    await get("/")  # the web server and its routes, as the web chat's first visit loads them
    warm = held()
    sampler = common.Sampler()
    task = asyncio.create_task(sampler.run())
    sid, statuses, list_bytes = await session()
    sampler.running = False
    await task
    with_session = held()
    _, second, _ = await session()  # a second session beside the first: what each one more holds
    two_sessions = held()
    runner.cancel()
    common.report({"idle": idle, "gateway": warm - idle, "with_session": with_session, "session": with_session - warm,
                   "second_session": two_sessions - with_session, "peak": sampler.peak - common.IMAGE_COST[0],
                   "above_warm": sampler.peak - common.IMAGE_COST[0] - warm, "image": common.IMAGE_COST[0],
                   "host": common.HOST_COST[0], "statuses": list(statuses) + list(second), "list_bytes": list_bytes,
                   "ok": bool(sid) and list(statuses) == [200, 202, 200, 200]})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"  # certificates and pages
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
    www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY),
               ("gw_config", "ws_port", PORT)])
asyncio.run(main(firmware))
