# A board that never sees /mcp never loads the MCP server's code: not at boot, not for the web chat; the first
# /mcp request loads the transport and the methods, ask and the console commands load when used. A module of its
# own: the booted App fills most of MicroPython's unit heap.
import asyncio
import os
import sys

import esp32
from mimi import mcp
from mimi.gateway import auth
from mimi.tools import builtin_defs  # noqa: F401  its 12 KB constants made first: the unit heap is small
from stub_app import stub_app
from support import NotImported, imported, remove_tree, run, tempdir

NAMES = ("mimi.mcp.server", "mimi.mcp.server_methods", "mimi.mcp.server_tools", "mimi.mcp.server_rpc",
         "mimi.mcp.server_ask", "mimi.mcp.server_commands")
LOADED_BY_MCP = NAMES[:4]  # the first /mcp request's; ask's channel and the settings (the commands) come when used
_WAIT_S = 10


def _loaded():
    return [name for name in NAMES if imported(name)]


def _port():
    return 20000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


async def _http(port, request):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = b""
    while True:
        data = await asyncio.wait_for(reader.read(512), _WAIT_S)
        if not data:
            break
        answer += data
    writer.close()
    await writer.wait_closed()
    return answer


def test_a_gateway_loads_the_mcp_server_at_the_first_mcp_request_only():
    from mimi.gateway.server import Gateway

    with NotImported(*NAMES):
        app = stub_app("mcp-lazy-gateway")
        try:
            mcp.setup(app)  # as App does at boot: the mcp_* console lines
            app.gateway = Gateway(app)
            app.config.set("gw_config", "ws_port", str(_port()))
            app.www_dir = app.top

            async def main():
                gateway = app.gateway
                task = asyncio.create_task(gateway.run())
                for _ in range(_WAIT_S * 50):
                    if gateway.port is not None:
                        break
                    await asyncio.sleep(0.02)
                answer = await _http(gateway.port, b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                assert answer.startswith(b"HTTP/1.0 404") and _loaded() == []  # the web chat loads none of it
                body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
                answer = await _http(gateway.port, b"POST /mcp HTTP/1.0\r\nAuthorization: Bearer " +
                                     auth.current(app.config).encode() + b"\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                assert answer.startswith(b"HTTP/1.0 400") and b"Missing session ID" in answer
                assert _loaded() == list(LOADED_BY_MCP)
                gateway.server.close()
                await task

            run(main())
        finally:
            remove_tree(app.top)


def test_the_booted_board_holds_none_of_the_mcp_server():
    with NotImported(*NAMES):
        from mimi.app import App

        esp32.set_flash_dir(None)
        top = tempdir("mcp-lazy-boot")
        try:
            app = App(data_root=top + "/data", cert_dirs=(), tools_dir=top + "/tools", www_dir=top + "/www")
            assert "mcp_role" in app.console.commands.names() and _loaded() == []  # the commands' lines only
        finally:
            remove_tree(top)
            for name in NAMES:
                sys.modules.pop(name, None)
