# The MCP client's transport against a scripted server on a loopback socket (both runtimes): the era found
# (2026-07-28 first, the initialize handshake otherwise), the session kept and opened again, SSE answers,
# notifications noted, errors and a server that is not there in words.
import asyncio
import json
import os

from support import run

from mimi.mcp.client import MODERN, Connection, Down, McpError
from mimi.mcp.client_answer import ANSWER_MAX, STRING_MAX


def _port():
    return 21000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


async def _read_request(reader):
    head = b""
    while b"\r\n\r\n" not in head:
        data = await reader.read(512)
        if not data:
            return None, None
        head += data
    head, body = head.split(b"\r\n\r\n", 1)
    headers = {}
    for line in head.decode().split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    want = int(headers.get("content-length", "0")) - len(body)
    while want > 0:
        data = await reader.read(want)
        want -= len(data)
        body += data
    return headers, json.loads(body)


class Stub:
    """A scripted MCP server: answer(message, headers) -> (status, headers, body bytes); `seen` records
    (method, headers, message) of every request."""

    def __init__(self, answer):
        self.answer, self.seen, self.port = answer, [], _port()

    async def _handle(self, reader, writer):
        headers, message = await _read_request(reader)
        if headers is not None:
            self.seen.append((message.get("method"), headers, message))
            status, extra, body = self.answer(message, headers)
            head = "HTTP/1.1 {} X\r\nContent-Length: {}\r\n".format(status, len(body))
            for name in extra:
                head += "{}: {}\r\n".format(name, extra[name])
            writer.write(head.encode() + b"\r\n")
            writer.write(body)  # apart: a 60 KB answer is not copied twice on the unit heap
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    def run(self, fn):
        async def main():
            server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
            try:
                return await fn("http://127.0.0.1:{}/mcp".format(self.port))
            finally:
                server.close()
                await server.wait_closed()

        return run(main())

    def methods(self):
        return [seen[0] for seen in self.seen]


def _json(message, result=None, error=None, extra=None):
    reply = {"jsonrpc": "2.0", "id": message.get("id")}
    if error is not None:
        reply["error"] = error
    else:
        reply["result"] = result
    headers = {"Content-Type": "application/json"}
    headers.update(extra or {})
    text = json.dumps(reply)
    reply = None  # the str's bytes are made next: one large copy at a time on the unit heap
    return 200, headers, text.encode()


def _sse(*messages):
    body = "".join("event: message\ndata: {}\n\n".format(json.dumps(m)) for m in messages)
    return 200, {"Content-Type": "text/event-stream"}, body.encode()


TOOLS = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}


def test_a_2026_server_is_spoken_to_statelessly_with_the_envelope_on_every_request():
    def answer(message, headers):
        if message["method"] == "server/discover":
            return _json(message, {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "ttlMs": 0})
        return _json(message, {"content": [{"type": "text", "text": "5"}], "isError": False})

    stub = Stub(answer)
    conn = stub.run(lambda url: _call(Connection(url, "tok"), "tools/call", {"name": "add", "arguments": {"a": 2}}))
    assert conn[1] == {"content": [{"type": "text", "text": "5"}], "isError": False}
    assert stub.methods() == ["server/discover", "tools/call"] and conn[0].version == MODERN
    _, headers, message = stub.seen[1]
    assert headers["mcp-protocol-version"] == MODERN and headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "add" and headers["authorization"] == "Bearer tok"
    assert headers["accept"] == "application/json, text/event-stream" and headers["host"].endswith(str(stub.port))
    meta = message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN and "mcp-session-id" not in headers
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mimiclaw"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert message["params"]["arguments"] == {"a": 2}


async def _call(conn, method, params):
    return conn, await conn.request(method, params, 5)


def _handshake_server(version="2025-06-18", lose_session_at=None):
    state = {"sessions": 0, "calls": 0}

    def answer(message, headers):
        method = message.get("method")
        if method == "server/discover":  # an older server: no such method, no session
            return 400, {"Content-Type": "application/json"}, json.dumps(
                {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Missing session ID"}}
            ).encode()
        if method == "initialize":
            state["sessions"] += 1
            result = {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                      "serverInfo": {"name": "t"}}
            return _json(message, result, extra={"Mcp-Session-Id": "s{}".format(state["sessions"])})
        if method == "notifications/initialized":
            return 202, {}, b""
        state["calls"] += 1
        if state["calls"] == lose_session_at or headers.get("mcp-session-id") != "s{}".format(state["sessions"]):
            return 404, {"Content-Type": "application/json"}, json.dumps(  # the server restarted: unknown session
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}}).encode()
        return _sse({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
                    {"jsonrpc": "2.0", "id": message["id"], "result": TOOLS})

    return Stub(answer)


def test_an_older_server_gets_the_handshake_its_session_and_version_and_its_notifications_are_noted():
    stub = _handshake_server()
    conn, result = stub.run(lambda url: _call(Connection(url), "tools/list", {}))
    assert result == TOOLS and conn.version == "2025-06-18"  # the server's choice among the handshake versions
    assert stub.methods() == ["server/discover", "initialize", "notifications/initialized", "tools/list"]
    offered = stub.seen[1][2]["params"]
    assert offered["protocolVersion"] == "2025-11-25" and offered["clientInfo"]["name"] == "mimiclaw"
    assert "_meta" not in offered and "authorization" not in stub.seen[1][1]
    for _, headers, _ in stub.seen[2:]:
        assert headers["mcp-session-id"] == "s1" and headers["mcp-protocol-version"] == "2025-06-18"
    assert "id" not in stub.seen[2][2]  # a notification
    assert conn.tools_changed  # notifications/tools/list_changed came on the answer's stream


def test_a_lost_session_is_opened_again_once():
    stub = _handshake_server(lose_session_at=1)
    conn, result = stub.run(lambda url: _call(Connection(url), "tools/list", {}))
    assert result == TOOLS and conn.session == "s2"
    assert stub.methods().count("initialize") == 2


def test_a_modern_only_server_with_no_common_version_says_so():
    def answer(message, headers):
        return _json(message, error={"code": -32022, "message": "Unsupported protocol version",
                                     "data": {"supported": ["2027-01-01"], "requested": MODERN}})

    stub = Stub(answer)
    exc = stub.run(lambda url: _raised(Connection(url).request("tools/list", {}, 5)))
    assert isinstance(exc, McpError) and "speaks only protocol versions 2027-01-01" in exc.message
    assert stub.methods() == ["server/discover"]  # no handshake tried: a real incompatibility


def test_errors_in_words_a_refused_token_a_tool_error_and_a_server_that_is_not_there():
    def answer(message, headers):
        if headers.get("authorization") != "Bearer good":
            return 401, {"Content-Type": "text/plain"}, b"Unauthorized"
        if message["method"] == "server/discover":
            return _json(message, {"supportedVersions": [MODERN]})
        return _json(message, error={"code": -32602, "message": "Unknown tool: nope"})

    exc = Stub(answer).run(lambda url: _raised(Connection(url, "bad").request("tools/list", {}, 5)))
    assert isinstance(exc, McpError) and exc.status == 401 and exc.message == "HTTP 401 (the token was refused)"
    exc = Stub(answer).run(lambda url: _raised(Connection(url, "good").request("tools/call", {"name": "nope"}, 5)))
    assert exc.code == -32602 and exc.message == "Unknown tool: nope"
    exc = run(_raised(Connection("http://127.0.0.1:{}/mcp".format(_port())).request("tools/list", {}, 5)))
    assert isinstance(exc, Down) and "cannot reach 127.0.0.1" in str(exc)


def test_a_long_string_in_an_answer_is_cut_before_it_is_parsed():
    image = "iVBOR" + "A" * (ANSWER_MAX + 2048)  # over ANSWER_MAX whole: only the cut makes it fit

    def answer(message, headers):
        if message["method"] == "server/discover":
            return _json(message, {"supportedVersions": [MODERN]})
        return _json(message, {"content": [{"type": "image", "data": image, "mimeType": "image/png"},
                                           {"type": "text", "text": 'say "hi"\n'}]})

    result = Stub(answer).run(lambda url: Connection(url).request("tools/call", {"name": "snap"}, 5))
    data = result["content"][0]["data"]
    assert data.startswith("iVBORAAA") and data.endswith("\u2026[cut]") and len(data) == STRING_MAX + 6
    assert result["content"][1]["text"] == 'say "hi"\n'  # escapes kept whole


def test_a_server_that_never_answers_is_given_up_at_the_timeout():
    async def silent(reader, writer):  # reads the request, never answers, until the client hangs up
        while await reader.read(512):
            pass
        writer.close()

    async def main():
        port = _port()
        server = await asyncio.start_server(silent, "127.0.0.1", port)
        try:
            return await _raised(Connection("http://127.0.0.1:{}/mcp".format(port)).request("tools/list", {}, 1))
        finally:
            server.close()
            await server.wait_closed()

    exc = run(main())
    assert isinstance(exc, Down) and str(exc) == "127.0.0.1 took longer than the whole-request limit of 1 s"


async def _raised(coro):
    try:
        await coro
    except Exception as exc:  # the test looks at which, and its words
        return exc
    raise AssertionError("nothing raised")
