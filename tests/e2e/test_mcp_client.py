# The board as an MCP client, against the official MCP Python SDK's high-level server (MCPServer) on loopback,
# in each era (the stateless 2026-07-28 revision, and a server that speaks only the 2025-11-25 handshake), on
# both runtimes and the ROMFS form: mcp_add, the agent calling mcp__local__add through the fake Claude, a list
# that changes, a slow tool, a server stopped mid-session, a restart; and Claude's MCP connector (mcp_remote)
# through the fake API.
import json
import re
import shutil
import threading
import time

import pytest

from host_sim.fake_anthropic import mcp_tool, text, tool_use
from tests.certs import make_test_ca
from tests.e2e.conftest import API_KEY, OWNER_ID, free_port
from tests.runtimes import ROMFS_MP_HEAP, RUNTIMES, romfs_runtime

mcp_server = pytest.importorskip("mcp.server.mcpserver")
uvicorn = pytest.importorskip("uvicorn")
import mcp_types  # noqa: E402  (the SDK's own types, installed with it)

# The ROMFS form at the core scenarios' heap plus what the MCP client holds: measured at idle (heap_info after a
# collection) +7 KB with a server for Claude's connector, +12 KB more with a local server and its 3 tools; a
# tool turn's peak on top of that ran out at the core's 736K once the image had grown to 431 KB (voice, the web
# app, small-board mode): 32K more.
MCP_ROMFS_MP_HEAP = "{}K".format(int(ROMFS_MP_HEAP[:-1]) + 32)
RUNTIMES_MCP = dict(RUNTIMES, romfs=romfs_runtime(MCP_ROMFS_MP_HEAP))

TOKEN = "mcp-test-token-0123456789abcdefSECRET"
HANDSHAKE_ONLY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


@pytest.fixture(params=sorted(RUNTIMES_MCP))
def runtime(request):
    return RUNTIMES_MCP[request.param]


class SdkServer:
    """The SDK's MCPServer with add, slow and grow (which adds multiply and announces it), behind a Bearer
    token, served by uvicorn in a thread. era "2026-07-28": the SDK as it is (it answers server/discover);
    era "2025-11-25": a server of that revision, which refuses a request of a later protocol version as the
    SDK of that time did (400, a JSON-RPC error). `seen`: (method, headers) of every request."""

    def __init__(self, era, token=TOKEN, tls=None):
        self.era, self.token, self.port, self.seen, self.tls = era, token, free_port(), [], tls
        app = mcp_server.MCPServer("local")

        @app.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        @app.tool()
        async def slow() -> str:
            """Takes ten seconds."""
            import anyio

            await anyio.sleep(10)
            return "finally"

        @app.tool()
        async def grow(ctx: mcp_server.Context) -> str:
            """Adds the multiply tool."""

            def multiply(a: int, b: int) -> int:
                """Multiply two numbers."""
                return a * b

            app.add_tool(multiply)
            if ctx.protocol_version != "2026-07-28":  # the handshake era: announced on this call's stream
                await ctx.session.send_notification(mcp_types.ToolListChangedNotification(),
                                                    related_request_id=ctx.request_id)
            return "grown"

        self.app = app.streamable_http_app(stateless_http=era == "2026-07-28")
        certificate = dict(ssl_certfile=tls["server.pem"], ssl_keyfile=tls["server.key"]) if tls else {}
        config = uvicorn.Config(self._asgi, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                interface="asgi3", **certificate)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self):
        if self.tls:  # the test certificate names localhost
            return "https://localhost:{}/mcp".format(self.port)
        return "http://127.0.0.1:{}/mcp".format(self.port)

    def methods(self):
        return [method for method, _ in self.seen]

    async def _asgi(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            method = json.loads(body).get("method") if body else scope["method"]
        except ValueError:
            method = None
        self.seen.append((method, headers))
        if headers.get("authorization") != "Bearer " + self.token:
            return await _reply(send, 401, b'{"error": "invalid_token"}')
        version = headers.get("mcp-protocol-version")
        if self.era != "2026-07-28" and version is not None and version not in HANDSHAKE_ONLY:
            return await _reply(send, 400, json.dumps({"jsonrpc": "2.0", "id": "server-error", "error": {
                "code": -32600, "message": "Bad Request: Unsupported protocol version: " + version}}).encode())

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def start(self):
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started, "the SDK's server did not start"
        return self

    def stop(self):
        self.server.should_exit = True
        self.thread.join(10)


async def _reply(send, status, body):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


ERAS = ("2026-07-28", "2025-11-25")


@pytest.fixture(params=ERAS)
def sdk(request):
    server = SdkServer(request.param).start()
    yield server
    server.stop()


def _names(request):
    return [t.get("name") for t in request["body"].get("tools") or ()]


def _result(request):
    (block,) = request["body"]["messages"][-1]["content"]
    assert block["type"] == "tool_result"
    return block


def _added(dev, sdk, token=TOKEN):
    out = dev.command("mcp_add local {} {}".format(sdk.url, token), timeout=30)
    assert token not in out
    return out


def _wait_listed(dev, words, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = dev.command("mcp_list")
        if words in out:
            return out
        time.sleep(0.3)
    raise AssertionError("mcp_list never showed {!r}: {}".format(words, out))


def test_the_agent_calls_a_tool_of_an_sdk_server_in_its_own_era(sdk, device, fake):
    out = _added(device, sdk)
    assert "MCP server local added ({}): 3 tools: mcp__local__add, mcp__local__grow, mcp__local__slow".format(
        sdk.era) in out, out
    if sdk.era == "2026-07-28":  # stateless: discover, then self-contained requests
        assert sdk.methods()[:2] == ["server/discover", "tools/list"] and "initialize" not in sdk.methods()
        assert sdk.seen[1][1]["mcp-method"] == "tools/list" and "mcp-session-id" not in sdk.seen[1][1]
    else:  # discover refused: the handshake, its session id on every later request
        assert sdk.methods()[:4] == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
        assert sdk.seen[3][1]["mcp-session-id"] and sdk.seen[3][1]["mcp-protocol-version"] == "2025-11-25"
    assert "tier operator, level confirm" in device.command("tool_policy mcp__local__add")
    device.command("tool_policy mcp__local__add autonomous")
    fake.script(tool_use("mcp__local__add", {"a": 2, "b": 3}), text("2 plus 3 is 5."))
    assert "2 plus 3 is 5." in device.command("chat what is 2 plus 3?", timeout=30)
    first, second = fake.wait_requests(2)
    (offered,) = [t for t in first["body"]["tools"] if t["name"] == "mcp__local__add"]
    assert offered["description"] == "Add two numbers." and offered["input_schema"]["required"] == ["a", "b"]
    assert _result(second)["content"] == "5" and _result(second)["is_error"] is False
    assert first["status"] == 200 and "mcp_servers" not in first["body"]  # no connector: none configured
    listed = device.command("mcp_list")
    assert TOKEN not in listed and "local  {}  token mcp-\u2026CRET  3 tools".format(sdk.url) in listed


def test_a_changed_list_a_slow_tool_and_a_server_stopped_mid_session(sdk, device, fake):
    _added(device, sdk)
    for tool in ("grow", "slow", "add"):
        device.command("tool_policy mcp__local__{} autonomous".format(tool))
    fake.script(tool_use("mcp__local__grow", {}), text("Grown."))
    device.command("chat grow", timeout=30)
    _wait_listed(device, "4 tools")  # fetched again in the background: announced, or stale (ttlMs 0)
    fake.script(text("I can multiply now."))
    device.command("chat what can you do?", timeout=30)
    assert "mcp__local__multiply" in _names(fake.wait_requests(3)[2])
    device.command("config_set mcp_config.timeout_s 2")
    fake.script(tool_use("mcp__local__slow", {}), text("That took too long."))
    device.command("chat be slow", timeout=30)
    asked, answered = fake.wait_requests(5)[3:5]
    # Cut at 2 s, not after the slow tool's 10: timed around the tool call, not over the chat's two model calls.
    assert 2 <= answered["time"] - asked["time"] < 10
    result = _result(answered)
    assert result["is_error"] and result["content"] == ("the MCP server 'local' did not answer within 2 s "
                                                        "(mcp_config.timeout_s)")
    if sdk.era == "2025-11-25":  # told the call was given up (in 2026-07-28 the closed stream says it)
        deadline = time.monotonic() + 5
        while "notifications/cancelled" not in sdk.methods() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "notifications/cancelled" in sdk.methods()
    sdk.stop()
    fake.script(tool_use("mcp__local__add", {"a": 1, "b": 1}), text("The server is down."))
    out = device.command("chat add one and one", timeout=30)
    result = _result(fake.wait_requests(7)[6])
    assert result["is_error"] and result["content"].startswith("the MCP server 'local' cannot be reached: cannot "
                                                               "reach 127.0.0.1")
    lines = [line for line in out.splitlines() if line.startswith("mcp: local:")]  # one console line
    assert len(lines) == 1 and re.match(r"mcp: local: cannot reach 127\.0\.0\.1:\d+ \(.*\); its tools answer with "
                                        r"an error until it is back$", lines[0]), out
    assert "The server is down." in out and "Traceback" not in device.output


def test_the_server_list_survives_a_restart_and_its_tools_come_back_without_a_command(boot, fake):
    sdk = SdkServer("2025-11-25").start()
    try:
        dev = boot()
        dev.command("set_api_key " + API_KEY)
        _added(dev, sdk)
        dev.restart()
        _wait_listed(dev, "3 tools")  # fetched by the client's task once the network is up
        fake.script(text("Still here."))
        dev.command("chat hello", timeout=30)
        assert "mcp__local__add" in _names(fake.wait_requests(1)[0])
    finally:
        sdk.stop()


def test_https_with_the_verifying_tls_context_a_trusted_ca_and_an_unknown_one(boot, flash, tmp_path):
    (tmp_path / "ca").mkdir()
    paths = make_test_ca(tmp_path / "ca")
    sdk = SdkServer("2026-07-28", tls=paths).start()
    try:
        dev = boot()
        out = _added(dev, sdk)
        assert "but it did not answer: the TLS certificate of localhost is not trusted" in out, out
        certs = flash / "data" / "certs"
        certs.mkdir(exist_ok=True)
        shutil.copy(paths["ca.der"], certs / "test_ca.der")
        dev.restart()  # the trusted certificates are read at boot
        assert "MCP server local updated (2026-07-28): 3 tools" in _added(dev, sdk)
    finally:
        sdk.stop()


def test_a_refused_token_and_a_server_that_is_not_there_say_so_in_one_line(sdk, device):
    out = _added(device, sdk, "wrong-token")
    assert "MCP server local added (saved), but it did not answer: HTTP 401 (the token was refused)" in out
    out = device.command("mcp_add gone http://127.0.0.1:{}/mcp".format(free_port()), timeout=30)
    assert re.search(r"MCP server gone added \(saved\), but it did not answer: cannot reach 127\.0\.0\.1:\d+", out)
    assert "removed" in device.command("mcp_remove gone")


@pytest.mark.parametrize("runtime", sorted(RUNTIMES), indirect=True)  # Telegram's ROMFS heap is another story
def test_claudes_mcp_connector_reaches_the_request_the_draft_and_keeps_only_the_text(owner_bot, tg, fake):
    dev = owner_bot()
    refused = dev.command("mcp_remote lan https://192.168.1.10/mcp")
    assert "error: Claude's MCP connector calls servers from the internet" in refused
    out = dev.command("mcp_remote docs https://mcp.example.com/mcp {}".format(TOKEN))
    assert TOKEN not in out and "Anthropic's API calls it itself" in out
    fake.script(mcp_tool("docs", "search_docs", {"q": "romfs"}, "ROMFS came in MicroPython 1.25.",
                         "It came in 1.25.", intro="Let me check the docs.", delay=0.05, call_seconds=1.5),
                text("You are welcome."))
    tg.user_message(OWNER_ID, "When did ROMFS come to MicroPython?")
    assert tg.wait_for(lambda: tg.sent(OWNER_ID), 30), dev.output[-3000:]
    first = fake.wait_requests(1)[0]
    assert first["status"] == 200  # the fake checks mcp_servers, the toolsets and the header as the API does
    assert first["body"]["mcp_servers"] == [{"type": "url", "url": "https://mcp.example.com/mcp", "name": "docs",
                                             "authorization_token": TOKEN}]
    assert first["body"]["tools"][-1] == {"type": "mcp_toolset", "mcp_server_name": "docs"}
    assert first["headers"]["anthropic-beta"] == "advanced-tool-use-2025-11-20,mcp-client-2025-11-20"
    assert any("using docs" in draft["shown"] for draft in tg.drafts(OWNER_ID))
    (final,) = tg.sent(OWNER_ID)
    assert "It came in 1.25." in final["shown"] and "using docs" not in final["shown"]
    tg.user_message(OWNER_ID, "Thanks!")
    assert tg.wait_for(lambda: len(tg.sent(OWNER_ID)) == 2, 30)
    history = fake.wait_requests(2)[1]["body"]["messages"]
    kept = json.dumps(history)
    assert "mcp_tool_use" not in kept and "mcp_tool_result" not in kept  # the session kept the text only
    assert "It came in 1.25." in kept and "mcptoolu" not in kept
    assert "removed" in dev.command("mcp_remove docs") and "Traceback" not in dev.output
