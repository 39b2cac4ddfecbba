# One MCP server over Streamable HTTP, as its client, in whichever era it speaks: the 2026-07-28 stateless
# revision first (server/discover, the per-request _meta envelope), else the initialize handshake (2025-11-25
# offered, an older choice of the server's taken), its Mcp-Session-Id kept and a lost session opened again once.
import asyncio
import json

from mimi import VERSION, jsontext
from mimi.llm.sse import SSEError, SSEParser
from mimi.mcp.client_answer import ANSWER_MAX, Answer, Down
from mimi.net import http
from mimi.platform import const

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
UNSUPPORTED_VERSION = const(-32022)
INVALID_PARAMS = const(-32602)
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CLIENT = "io.modelcontextprotocol/clientInfo"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_NAMED = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}  # mirrored in Mcp-Name
_HEADER_SAFE_MAX = const(126)


class McpError(Exception):
    """The server answered with a JSON-RPC error, or refused the request with an HTTP status."""

    def __init__(self, code, message, data=None, status=200):
        super().__init__(message)
        self.code, self.message, self.data, self.status = code, message, data, status


class _SessionLost(McpError):
    """404 for our Mcp-Session-Id: the server forgot the session (restarted); a new one is opened once."""


def header_value(text):
    """A header value as the 2026 spec writes it: plain printable ASCII, else "=?base64?...?=" (UTF-8)."""
    plain = text == text.strip()
    for ch in text:
        plain = plain and 32 <= ord(ch) <= _HEADER_SAFE_MAX
    if plain and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    import binascii

    return "=?base64?{}?=".format(binascii.b2a_base64(text.encode()).decode().strip())


def _error_of(message, status=200):
    error = message.get("error") if isinstance(message, dict) else None
    if not isinstance(error, dict):
        return None
    code, text = error.get("code"), error.get("message")
    return McpError(code if isinstance(code, int) else 0, text if isinstance(text, str) else "error", error.get("data"),
                    status)


class Connection:
    """One MCP server, as its client: the era found at the first request (negotiate) and kept while it works.
    `tools_changed` turns True when a notifications/tools/list_changed came with an answer (the owner of the
    tool list refetches it)."""

    def __init__(self, url, token=None):
        self.url, self.token = url, token
        self.version = None  # the protocol version in use, once negotiated
        self.session = None  # Mcp-Session-Id (the handshake era)
        self.tools_changed = False
        self._ids = 0
        self._negotiating = asyncio.Lock()  # a call and a list fetch at once negotiate once

    @property
    def modern(self):
        return self.version == MODERN

    async def request(self, method, params, timeout_s):
        """The result of one request, the era negotiated first when needed. McpError, Down."""
        if self.version is None:
            await self._negotiate_once(timeout_s, (None, None))
        used = (self.version, self.session)
        try:
            return await self._send(method, params, timeout_s, self.version)
        except McpError as exc:
            if not isinstance(exc, _SessionLost) and exc.code != UNSUPPORTED_VERSION:
                raise
        await self._negotiate_once(timeout_s, used)  # a restarted server: a new session, or another era
        return await self._send(method, params, timeout_s, self.version)

    async def _negotiate_once(self, timeout_s, failed):
        """Negotiate unless another request did since `failed` (the version and session that did not work)."""
        async with self._negotiating:
            if (self.version, self.session) == failed:
                await self.negotiate(timeout_s)

    async def cancel(self, timeout_s):
        """Tell a handshake-era server the last request was given up (in the 2026-07-28 era the closed stream
        said so). Best effort: a task of its own, never raising."""
        if self.version is None or self.modern:
            return
        try:
            await self._send("notifications/cancelled", {"requestId": self._ids, "reason": "timed out"}, timeout_s,
                             self.version)
        except Exception:  # the server is slow or gone: nothing more to tell it
            pass

    async def negotiate(self, timeout_s):
        """The 2026-07-28 revision if the server offers it (server/discover), else the initialize handshake.
        Anything but a reachable server's answer is no verdict: Down is raised as it came."""
        self.version = self.session = None
        try:
            result = await self._send("server/discover", {}, timeout_s, MODERN)
            supported = result.get("supportedVersions") if isinstance(result, dict) else None
            if isinstance(supported, list) and MODERN in supported:
                self.version = MODERN
                return
        except McpError as exc:  # an older server: "method not found", a 4xx, "missing session id"...
            supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
            if exc.code == UNSUPPORTED_VERSION and isinstance(supported, list) and not [
                    v for v in supported if v in HANDSHAKE_VERSIONS]:
                raise McpError(exc.code, "the server speaks only protocol versions {}; this board speaks {} and {}"
                               .format(", ".join(str(v) for v in supported), MODERN, ", ".join(HANDSHAKE_VERSIONS)))
        params = {"protocolVersion": HANDSHAKE, "capabilities": {},
                  "clientInfo": {"name": "mimiclaw", "version": VERSION}}
        result = await self._send("initialize", params, timeout_s, None)
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if version not in HANDSHAKE_VERSIONS:
            raise McpError(0, "the server chose protocol version {}, which this board does not speak".format(version))
        self.version = version
        await self._send("notifications/initialized", None, timeout_s, version)

    def _headers(self, method, params, version):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        if version == MODERN:
            headers["Mcp-Method"] = method
            named = params.get(_NAMED.get(method, "")) if isinstance(params, dict) else None
            if isinstance(named, str):
                headers["Mcp-Name"] = header_value(named)
        elif self.session is not None:
            headers["Mcp-Session-Id"] = self.session
        return headers

    def _body(self, method, params, version):
        """The JSON-RPC message: a request with an id, or a notification (params None, method notifications/)."""
        message = {"jsonrpc": "2.0", "method": method}
        if not method.startswith("notifications/"):
            self._ids += 1
            message["id"] = self._ids
        if version == MODERN:  # the per-request envelope: the version and who asks, in every request
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta[_META_VERSION] = MODERN
            meta[_META_CLIENT] = {"name": "mimiclaw", "version": VERSION}
            meta[_META_CAPABILITIES] = {}
            params["_meta"] = meta
        if params is not None:
            message["params"] = params
        return message

    async def _send(self, method, params, timeout_s, version):
        message = self._body(method, params, version)
        headers = self._headers(method, params, version)
        try:
            response = await http.request("POST", self.url, headers, json.dumps(message).encode(), timeout_s,
                                          timeout_s, timeout_s)
        except http.HTTPError as exc:
            raise Down(str(exc))
        try:
            if method == "initialize" and "mcp-session-id" in response.headers:
                self.session = response.headers["mcp-session-id"]
            return await self._answer(response, message.get("id"), "Mcp-Session-Id" in headers)
        except http.HTTPError as exc:
            raise Down(str(exc))
        except (ValueError, SSEError) as exc:  # not JSON, not SSE: not an MCP server's answer
            raise Down("its answer could not be read ({})".format(exc))
        finally:
            await response.aclose()

    async def _answer(self, response, request_id, had_session):
        status, kind = response.status, response.headers.get("content-type", "").split(";")[0].strip().lower()
        answer = Answer(response)
        if request_id is None and status in (200, 202, 204):
            return None  # a notification taken
        if kind == "text/event-stream" and status == 200:
            return await self._events(answer, request_id)
        body = await answer.whole()
        if status == 404 and had_session:
            raise _SessionLost(0, "session expired", None, status)
        message = jsontext.loads(body) if body and kind == "application/json" else None
        error = _error_of(message, status)
        if error is not None:
            raise error
        if status != 200:
            reason = "the token was refused" if status in (401, 403) else response.reason or "error"
            raise McpError(0, "HTTP {} ({})".format(status, reason), None, status)
        if not isinstance(message, dict) or "result" not in message:
            raise Down("its answer is not a JSON-RPC response")
        return message["result"]

    async def _events(self, answer, request_id):
        """Read an SSE stream until the response to our request; notifications on the way are noted."""
        parser = SSEParser(ANSWER_MAX)
        while True:
            line = await answer.line()
            if line is None:
                raise Down("it closed the stream before answering")
            event = parser.feed(line)
            if event is None:
                continue
            message = jsontext.loads(event[1]) if event[1].strip() else None
            if not isinstance(message, dict):
                continue
            if message.get("method") == "notifications/tools/list_changed":
                self.tools_changed = True
            elif message.get("id") == request_id and ("result" in message or "error" in message):
                error = _error_of(message)
                if error is not None:
                    raise error
                return message["result"]
            # progress, log messages, requests to a client (this board offers no sampling): not ours to act on
