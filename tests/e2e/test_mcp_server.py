# The board's MCP server from the outside: the official MCP Python SDK's client (its Streamable HTTP transport
# and ClientSession), pinned once to the 2025-11-25 handshake and once to the 2026-07-28 stateless revision,
# against the booted firmware; then a fuzzed set of bodies, after which the web chat still works.
import asyncio
import hashlib
import json
import os

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import Implementation
from websockets.asyncio.client import connect

from host_sim.fake_anthropic import text
from tests.e2e.gateway_client import hello, say, until_reply
from tests.runtimes import RUNTIMES, romfs_runtime

CLIENT = "e2e-client"  # the clientInfo name: shown in the console's lines, never the client's key
ERAS = ("handshake", "stateless")
# The ROMFS form at the core scenarios' heap (tests/runtimes.py) and a step more: this scenario also holds the
# gateway's web server (microdot and the routes: 17 KB on the unix port) and an MCP session (the server's code,
# the session, the tools called: 17 KB; make bench, mcp_session_heap), then runs a turn of the agent (ask). After
# the ask the names interned (qstrs) number 2,541, one past what the unix port's seven qstr pools hold: the eighth,
# 28 KB in one block, is made there (864K passes, 832K does not); the Telegram scenarios' heap leaves a margin.
ROMFS_MCP_MP_HEAP = os.environ.get("MIMI_ROMFS_MCP_MP_HEAP", "896K")
RUNTIMES_WITH_ROMFS = dict(RUNTIMES, romfs=romfs_runtime(ROMFS_MCP_MP_HEAP))
MEMORY_LINE = "The owner's greenhouse door code is kept in the blue notebook."
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def caller_of(token, address="127-0-0-1"):
    """The key the board gives an MCP client: its address and the first 6 hex digits of its token's SHA-256."""
    return "{}_{}".format(address, hashlib.sha256(token.encode()).hexdigest()[:6])


def mcp_url(gw):
    return "http://127.0.0.1:{}/mcp".format(gw.port)


class Client:
    """The SDK's client on the board, in one era: `async with Client(gw, era) as session`."""

    def __init__(self, gw, era, token=None):
        self.url = mcp_url(gw)
        self.era = era
        self.headers = {"Authorization": "Bearer " + (gw.token if token is None else token)}

    async def __aenter__(self):
        self.http = httpx2.AsyncClient(headers=self.headers, timeout=60)
        self.transport = streamable_http_client(self.url, http_client=self.http)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write, client_info=Implementation(name=CLIENT, version="1.0"))
        await self.session.__aenter__()
        if self.era == "handshake":
            opened = await self.session.initialize()
            assert opened.protocol_version == "2025-11-25" and opened.server_info.name == "mimiclaw"
        else:
            found = await self.session.discover()
            assert found.supported_versions == ["2026-07-28"]
        return self.session

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.http.aclose()


def texts(result):
    return "".join(block.text for block in result.content)


def audit_lines(flash):
    return [json.loads(line) for path in sorted((flash / "data" / "audit").iterdir())
            for line in path.read_text().splitlines()]


@pytest.mark.parametrize("runtime", [RUNTIMES_WITH_ROMFS[k] for k in sorted(RUNTIMES_WITH_ROMFS)],
                         ids=sorted(RUNTIMES_WITH_ROMFS))
def test_the_sdk_client_in_both_eras_lists_calls_reads_asks_and_is_refused_what_its_role_may_not(
        gateway, fake, flash):
    dev = gateway.device
    dev.command("memory_write " + MEMORY_LINE)
    dev.command("gpio_allow 4")

    async def each_era(era):
        async with Client(gateway, era) as session:
            listed = (await session.list_tools()).tools
            names = [tool.name for tool in listed]
            assert names[0] == "ask" and "get_current_time" in names and "recall" in names
            assert not [name for name in names if name.startswith("mcp__")]
            recall = [tool for tool in listed if tool.name == "recall"][0]
            assert recall.input_schema["required"] == ["query"] and recall.annotations.read_only_hint is True
            gpio = [tool for tool in listed if tool.name == "gpio_write"][0]
            assert gpio.annotations.read_only_hint is False and gpio.description.startswith("Set a GPIO")
            now = await session.call_tool("get_current_time", {})
            assert not now.is_error and '"utc": "20' in texts(now)
            found = await session.call_tool("recall", {"query": "greenhouse"})  # the owner's memory: refused
            assert found.is_error and "needs the owner role" in texts(found) and "blue notebook" not in texts(found)
            refused = await session.call_tool("gpio_write", {"pin": 4, "value": 1})
            assert refused.is_error and "needs the operator role" in texts(refused)
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("no_such_tool", {})
            assert unknown.value.error.code == -32602 and "Unknown tool: no_such_tool" in unknown.value.error.message
            resources = {r.name: r.uri for r in (await session.list_resources()).resources}
            assert set(resources) == {"SOUL.md"}  # USER.md, MEMORY.md, the daily note: the owner's clients' only
            with pytest.raises(MCPError) as hidden:
                await session.read_resource("mimi://memory/MEMORY.md")
            assert "is the owner's" in hidden.value.error.message and "blue notebook" not in str(hidden.value)
            fake.script(text("Hello from the board's own agent ({}).".format(era)))
            answer = await session.call_tool("ask", {"text": "who are you, board?"})
            assert not answer.is_error and texts(answer) == "Hello from the board's own agent ({}).".format(era), texts(answer)
            assert "who are you, board?" in json.dumps(fake.requests[-1]["body"]["messages"][-1])

    for era in ERAS:
        asyncio.run(each_era(era))
    assert "operator" in dev.command("mcp_role operator")

    async def as_operator(era):
        async with Client(gateway, era) as session:
            done = await session.call_tool("gpio_write", {"pin": 4, "value": 1})
            assert not done.is_error, texts(done)

    for era in ERAS:
        asyncio.run(as_operator(era))
    assert "owner" in dev.command("mcp_role owner")

    async def as_owner():
        async with Client(gateway, "handshake") as session:
            resources = {r.name: r.uri for r in (await session.list_resources()).resources}
            assert set(resources) >= {"SOUL.md", "USER.md", "MEMORY.md"} and len(resources) == 4
            memory = (await session.read_resource(resources["MEMORY.md"])).contents[0]
            assert memory.mime_type == "text/markdown" and MEMORY_LINE in memory.text
            found = await session.call_tool("recall", {"query": "greenhouse"})
            assert not found.is_error and "blue notebook" in texts(found)

    asyncio.run(as_owner())
    calls = [line for line in audit_lines(flash) if line["channel"] == "mcp"]
    caller = caller_of(gateway.token)
    assert {line["chat"] for line in calls} == {caller}  # its address and credential, not the name it sends
    assert [line["ok"] for line in calls if line["tool"] == "gpio_write"] == [False, False, True, True]
    session = flash / "data" / "sessions" / "mcp_{}.jsonl".format(caller)
    assert [json.loads(line)["role"] for line in session.read_text().splitlines()] == ["user", "assistant"] * 2
    assert "Traceback" not in dev.output


def test_without_the_token_the_sdk_client_is_refused_and_set_mcp_token_changes_it(gateway):
    async def opens(token, era="handshake"):
        async with Client(gateway, era, token=token):
            return True

    for era in ERAS:
        with pytest.raises(MCPError) as refused:
            asyncio.run(opens("not-the-token", era))
        assert "token missing or wrong" in refused.value.error.message
    answer = httpx2.post(mcp_url(gateway), content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
                         headers=JSON_HEADERS)
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"] == 'Bearer realm="mimi"'
    assert "saved" in gateway.device.command("set_mcp_token mcp-only-token-1234")
    assert asyncio.run(opens("mcp-only-token-1234"))
    with pytest.raises(MCPError):
        asyncio.run(opens(gateway.token))  # the web chat's token no longer opens /mcp
    assert "web chat's token" in gateway.device.command("set_mcp_token off")
    assert asyncio.run(opens(gateway.token))


def post(gw, body, headers=None, session=None, version=None, method="POST"):
    """(status, headers, the JSON-RPC body or None) of one raw request to /mcp, with the token."""
    sent = dict(JSON_HEADERS, Authorization="Bearer " + gw.token)
    if session:
        sent["Mcp-Session-Id"] = session
    if version:
        sent["MCP-Protocol-Version"] = version
    sent.update(headers or {})
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer = httpx2.request(method, mcp_url(gw), content=data, headers=sent, timeout=30)
    parsed = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else None
    return answer.status_code, answer.headers, parsed


def envelope(method, params=None, rid=1, version="2026-07-28"):
    """A 2026-07-28 request: the per-request _meta envelope, and the headers that mirror it."""
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version,
                       "io.modelcontextprotocol/clientCapabilities": {},
                       "io.modelcontextprotocol/clientInfo": {"name": CLIENT, "version": "1"}}
    headers = {"Mcp-Method": method, "MCP-Protocol-Version": version}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, headers


def opened(gw):
    status, headers, body = post(gw, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": CLIENT, "version": "1"}}})
    assert status == 200 and body["result"]["protocolVersion"] == "2025-06-18"  # a revision it speaks: kept
    return headers["Mcp-Session-Id"]


def test_sessions_of_the_handshake_era_and_the_stateless_envelope_are_checked(gateway):
    sid = opened(gateway)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert post(gateway, ping, session=sid, version="2025-06-18")[2] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    status, _, body = post(gateway, ping)
    assert status == 400 and "Missing session ID" in body["error"]["message"]
    assert post(gateway, ping, session="0" * 32)[0] == 404
    assert post(gateway, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=sid)[0] == 202
    status, headers, _ = post(gateway, b"", session=sid, method="GET")
    assert status == 405 and headers["Allow"] == "POST, DELETE"  # no stream of the server's own
    assert post(gateway, b"", session=sid, method="DELETE")[0] == 200
    assert post(gateway, ping, session=sid)[0] == 404  # ended: the client initializes again
    status, _, body = post(gateway, {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2024-01-01", "capabilities": {}, "clientInfo": {"name": CLIENT}}})
    assert status == 200 and body["result"]["protocolVersion"] == "2025-11-25"  # unknown: the latest offered
    request, headers = envelope("tools/call", {"name": "get_current_time", "arguments": {}})
    status, _, body = post(gateway, request, headers)
    assert status == 200 and body["result"]["resultType"] == "complete" and not body["result"]["isError"]
    request, headers = envelope("ping", version="2099-01-01")
    status, _, body = post(gateway, request, headers)
    assert status == 400 and body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2099-01-01"}
    request, headers = envelope("tools/call", {"name": "get_current_time"})
    headers["Mcp-Name"] = "recall"
    status, _, body = post(gateway, request, headers)
    assert status == 400 and body["error"]["code"] == -32020 and "mcp-name" in body["error"]["message"]
    request, headers = envelope("ping")
    del request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert post(gateway, request, headers)[2]["error"]["code"] == -32602
    request, headers = envelope("no/such/method")
    status, _, body = post(gateway, request, headers)
    assert status == 404 and body["error"]["code"] == -32601
    status, _, _ = post(gateway, ping, session=sid, headers={"Origin": "http://evil.example"})
    assert status == 403  # a web page elsewhere (DNS rebinding)
    request, headers = envelope("ping")
    headers["Origin"] = "http://localhost:6274"  # a page on the client's own machine (an inspector)
    assert post(gateway, request, headers)[0] == 200
    assert "Traceback" not in gateway.device.output


def test_fuzzed_bodies_get_json_rpc_errors_or_4xx_and_the_web_chat_keeps_working(gateway, fake):
    sid = opened(gateway)
    deep = b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "x", "arguments": {"a": ' + \
        b"[" * 5000 + b"]" * 5000 + b"}}}"
    # (what is wrong, the body, the HTTP status and JSON-RPC error code it gets: None for a tool's error result)
    cases = (
        ("wrong version", {"jsonrpc": "1.0", "id": 1, "method": "ping"}, 400, -32600),
        ("missing id", {"jsonrpc": "2.0", "method": "tools/list"}, 400, -32600),
        ("null id", {"jsonrpc": "2.0", "id": None, "method": "ping"}, 400, -32600),
        ("object id", {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, 400, -32600),
        ("no method", {"jsonrpc": "2.0", "id": 1}, 400, -32600),
        ("unknown method", {"jsonrpc": "2.0", "id": 2, "method": "tools/destroy"}, 200, -32601),
        ("method not a string", {"jsonrpc": "2.0", "id": 2, "method": 42}, 400, -32600),
        ("params a list", {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1, 2]}, 400, -32602),
        ("arguments a string", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                "params": {"name": "recall", "arguments": "query"}}, 200, -32602),
        ("unknown tool", {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "\u0000\u202e"}},
         200, -32602),
        ("unknown resource", {"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                              "params": {"uri": "file:///etc/passwd"}}, 200, -32002),
        ("huge params", {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                         "params": {"name": "recall", "arguments": {"query": ["q" * 15000]}}}, 200, None),
        ("huge nesting", deep, None, None),  # refused as too deep (CPython) or parsed, then an unknown tool
        ("a batch", [{"jsonrpc": "2.0", "id": 6, "method": "ping"}], 400, -32600),
        ("a bare string", "ping", 400, -32600),
        ("invalid UTF-8", b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "\xff\xfe\xc0\xaf"}}',
         400, -32700),
        ("a surrogate half", b'{"jsonrpc": "2.0", "id": 7, "method": "\xed\xa0\x80"}', 400, -32700),
        ("not JSON", b'{"jsonrpc": "2.0", "id": ', 400, -32700),
        ("empty", b"", 400, -32700),
        ("a 200 KB body", b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": "' + b"x" * 200000 + b'"}}',
         413, -32600),
    )
    for name, body, status_wanted, code in cases:
        status, _, answer = post(gateway, body, session=sid, version="2025-06-18")
        assert answer is not None and answer["jsonrpc"] == "2.0", (name, status)
        if status_wanted is None:
            assert status in (200, 400) and "error" in answer, (name, status, answer)
        elif code is None:
            assert status == status_wanted and answer["result"]["isError"], (name, status, answer)
        else:
            assert (status, answer["error"]["code"]) == (status_wanted, code), (name, status, answer)
    for headers, status in (({"Content-Type": "text/plain"}, 415), ({"Accept": "text/html"}, 406)):
        assert post(gateway, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers, session=sid)[0] == status
    assert post(gateway, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid)[0] == 200
    fake.script(text("Still here."))

    async def web_chat():
        async with connect(gateway.url()) as ws:
            await hello(ws)
            await ws.send(say("are you there?"))
            return await until_reply(ws)

    assert asyncio.run(web_chat())[-1]["content"] == "Still here."
    output = gateway.device.output
    assert "Traceback" not in output and "Task exception" not in output, output[-3000:]
