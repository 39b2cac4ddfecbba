# The MCP server's transport: POST /mcp on the gateway's port (Streamable HTTP, JSON-RPC 2.0, one JSON body per
# answer) in both eras of the protocol: the initialize handshake (Mcp-Session-Id, MCP-Protocol-Version) and the
# stateless 2026-07-28 revision (the per-request _meta envelope). Loaded at the first /mcp request (gateway/routes.py).
import asyncio
import binascii
import hashlib
import os

from microdot import Response

from mimi import platform
from mimi.gateway import TOKEN_KEY, TOKEN_NS, auth, guard
from mimi.mcp import NS
from mimi.mcp.server_methods import MODERN_VERSION, Methods, initialized
from mimi.mcp.server_rpc import (HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, JSON_TYPE,
                                 METHOD_NOT_FOUND, UNSUPPORTED_VERSION, RpcError, checked,
                                 error, parsed, refused, result)
from mimi.platform import const
from mimi.utf8 import strict

_BODY_MAX = const(16 * 1024)  # bytes of one JSON-RPC message; a longer body gets 413
_DRAIN_MAX = const(256 * 1024)  # a refused body up to this is read and dropped, so that the client hears the 413
SESSIONS_MAX = const(8)  # handshake sessions kept; a new one past this ends the one unused for the longest
_CLIENT_NAME_MAX = const(32)  # characters of a client's name kept (shown in the console's lines)
_CREDENTIAL_HEX = const(6)  # hex digits of the token's digest in a caller's name
_READ_PIECE = const(1024)
_READ_TIMEOUT_S = const(10)
HANDSHAKE_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")  # oldest first; the last is offered
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_NAME_PARAMS = {"tools/call": "name", "resources/read": "uri"}  # 2026-07-28: mirrored in the Mcp-Name header
_SESSION = "Mcp-Session-Id"
# 2026-07-28: the HTTP status of a method's JSON-RPC error (the SDK's table; others 200). The handshake era
# answers them all with 200.
_STATUS_OF = {INVALID_PARAMS: 400, METHOD_NOT_FOUND: 404}


class Server:
    """The /mcp endpoint: who may use it (token, Origin), sessions of the handshake era, each message checked
    and answered; the methods themselves are mcp/server_methods.py's."""

    def __init__(self, app):
        self.app = app
        # session id -> [client name (its own word), protocol version, last used (ticks_ms), the credential it was
        # opened with (auth.credential): a new token ends it]
        self.sessions = {}
        self.methods = Methods(app)
        app.config.subscribe(self._on_config)

    async def serve(self, request):
        """One HTTP request to /mcp -> its Response. Never raises: nothing a client sends can stop the gateway."""
        try:
            return await self._serve(request)
        except RpcError as exc:  # refused before any method ran
            return error(exc.rid, exc.code, exc.message, exc.status or 400, data=exc.data)
        except MemoryError:
            return error(None, INTERNAL_ERROR, "the board is short of memory; try again later", 503)
        except Exception as exc:  # a bug: said in one line here, the client gets a JSON-RPC error
            platform.log("mcp: request failed: {}: {}".format(type(exc).__name__, exc))
            platform.print_exception(exc)
            return error(None, INTERNAL_ERROR, "internal error ({})".format(type(exc).__name__), 500)

    async def _serve(self, request):
        headers = request.headers
        if not guard.origin_allowed(self.app.config, headers, True):  # a web page of another site: the spec's 403
            raise refused(403, INVALID_REQUEST, "Forbidden: requests from web pages of other sites are refused")
        token = guard.mcp_token(self.app.config)  # the gateway checked both on the head already (routes.py)
        if token != auth.OFF and not auth.carries(request, token):
            return error(None, INVALID_REQUEST, guard.MCP_TOKEN_WRONG, 401, {"WWW-Authenticate": 'Bearer realm="mimi"'})
        credential = auth.credential(token)
        if request.method == "DELETE":
            return self._end(headers.get(_SESSION), credential)
        if request.method != "POST":  # GET: this server opens no stream of its own
            return error(None, INVALID_REQUEST, "Method Not Allowed: POST JSON-RPC messages here", 405,
                         {"Allow": "POST, DELETE"})
        if request.content_length > _BODY_MAX:
            await _drain(request)
            raise refused(413, INVALID_REQUEST, "the request is {} bytes; this server takes at most {}".format(
                request.content_length, _BODY_MAX))
        if not _accepts_json(headers.get("Accept")):
            raise refused(406, INVALID_REQUEST, "Not Acceptable: the client must accept application/json")
        if not (headers.get("Content-Type") or "").lower().startswith(JSON_TYPE):
            raise refused(415, INVALID_REQUEST, "Unsupported Media Type: send Content-Type: application/json")
        message = parsed(request.body)
        rid, method, params = checked(message)
        version = headers.get("MCP-Protocol-Version")
        caller = _caller(request, token)
        if version is not None and version not in HANDSHAKE_VERSIONS:  # the stateless revision (or an unknown one)
            return await self._stateless(headers, version, rid, method, params, caller)
        if method == "initialize" and rid is not None:
            return self._open(rid, params, caller, credential)
        self._session(headers.get(_SESSION), rid, credential)
        if rid is None:  # a notification (notifications/initialized, cancelled...) or a response: taken
            return Response(b"", 202)
        return await self._answer(rid, method, params, caller, False)

    def _on_config(self, ns, key):
        """A new token (mcp_config.token, or the web chat's while that is MCP's) ends every session opened with
        the old one at once."""
        if (ns, key) != (NS, "token") and (ns, key) != (TOKEN_NS, TOKEN_KEY):
            return
        config = self.app.config
        now = auth.credential(config.get(NS, "token") or config.get(TOKEN_NS, TOKEN_KEY))  # blank: none matches
        ended = [session_id for session_id, session in self.sessions.items() if session[3] != now]
        for session_id in ended:
            del self.sessions[session_id]
        if ended:
            platform.log("mcp: the token changed: {} session(s) opened with the old one ended".format(len(ended)))

    # -- the handshake era: initialize opens a session, its id comes with every later message --
    def _open(self, rid, params, caller, credential):
        wanted = params.get("protocolVersion")
        info = params.get("clientInfo")
        if not isinstance(wanted, str) or not isinstance(info, dict):
            raise refused(400, INVALID_PARAMS, "initialize needs protocolVersion and clientInfo", rid)
        version = wanted if wanted in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        client = client_name(info)
        while len(self.sessions) >= SESSIONS_MAX:
            self._forget_oldest()
        session_id = binascii.hexlify(os.urandom(16)).decode()
        self.sessions[session_id] = [client, version, platform.ticks_ms(), credential]
        platform.log("mcp: {} connected from {} (protocol {})".format(client, caller, version))
        return result(rid, initialized(version), {_SESSION: session_id})

    def _session(self, session_id, rid, credential):
        if session_id is None:
            raise refused(400, INVALID_REQUEST, "Bad Request: Missing session ID (initialize first, then send its "
                          "Mcp-Session-Id)", rid)
        session = self.sessions.get(session_id)
        if session is None or session[3] != credential:  # a session is its token's: another token finds none
            raise refused(404, INVALID_REQUEST, "Session not found: it ended (the board restarted, or the token it "
                          "was opened with changed); initialize again", rid)
        session[2] = platform.ticks_ms()
        return session[0]

    def _end(self, session_id, credential):
        self._session(session_id, None, credential)
        platform.log("mcp: {} disconnected".format(self.sessions.pop(session_id)[0]))
        return Response(b"", 200)

    def _forget_oldest(self):
        now, oldest = platform.ticks_ms(), None
        for session_id, session in self.sessions.items():
            if oldest is None or platform.ticks_diff(now, session[2]) > platform.ticks_diff(now, oldest[1][2]):
                oldest = (session_id, session)
        del self.sessions[oldest[0]]

    # -- the stateless era: each request carries its version and client in params._meta --
    async def _stateless(self, headers, version, rid, method, params, caller):
        meta = params.get("_meta")
        if rid is None:  # a notification: nothing to act on in this revision, taken if its version is served
            _served(version, None)
            return Response(b"", 202)
        if not isinstance(meta, dict) or _META_VERSION not in meta or _META_CAPABILITIES not in meta:
            raise refused(400, INVALID_PARAMS, "params._meta must carry the {} and {} envelope keys".format(
                _META_VERSION, _META_CAPABILITIES), rid)
        if meta[_META_VERSION] != version:
            raise refused(400, HEADER_MISMATCH, "mcp-protocol-version header does not match the request "
                          "envelope's protocol version", rid)
        if headers.get("Mcp-Method") != method:
            raise refused(400, HEADER_MISMATCH, "mcp-method header does not match the request body's method", rid)
        name_key = _NAME_PARAMS.get(method)
        named = params.get(name_key) if name_key else None
        if named is not None and _header_value(headers.get("Mcp-Name")) != named:
            raise refused(400, HEADER_MISMATCH, "mcp-name header does not match the request body's {!r} "
                          "parameter".format(name_key), rid)
        _served(version, rid)
        return await self._answer(rid, method, params, caller, True)

    async def _answer(self, rid, method, params, client, modern):
        try:
            answer = await self.methods.call(method, params, client, modern)
        except RpcError as exc:
            return error(rid, exc.code, exc.message, _STATUS_OF.get(exc.code, 200) if modern else 200,
                         data=exc.data)
        return result(rid, answer)


def _caller(request, token):
    """Who a request comes from, for the rate limits, the conversation (session mcp_<caller>) and the audit: its
    address and the credential it presented (a digest of the token, "open" while none is needed), never a name
    the client chooses: <address>_<6 hex digits>, the address's dots and colons as dashes."""
    address = guard.address(request).replace(".", "-").replace(":", "-")
    if token == auth.OFF:
        return address + "_open"
    digest = binascii.hexlify(hashlib.sha256(token.encode()).digest()).decode()
    return "{}_{}".format(address, digest[:_CREDENTIAL_HEX])


def client_name(info):
    """A client's name (clientInfo.name) as the console's lines show it: 1..32 of A-Z a-z 0-9 _ -, else
    "client"."""
    name = info.get("name")
    name = name if isinstance(name, str) else ""
    kept = "".join(ch if "a" <= ch <= "z" or "A" <= ch <= "Z" or "0" <= ch <= "9" or ch in "_-" else "_"
                   for ch in name[:_CLIENT_NAME_MAX])
    return kept.strip("_") or "client"


def _served(version, rid):
    if version != MODERN_VERSION:
        raise refused(400, UNSUPPORTED_VERSION, "Unsupported protocol version", rid,
                      {"supported": [MODERN_VERSION], "requested": version})


def _header_value(value):
    """An Mcp-Name header's value: itself, or the text inside its =?base64?...?= wrapping (None if broken)."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return strict(binascii.a2b_base64(value[9:-2]))
    except ValueError:  # binascii.Error is a ValueError on both runtimes
        return None


def _accepts_json(accept):
    if not accept:
        return True
    accept = accept.lower()
    return JSON_TYPE in accept or "*/*" in accept or "application/*" in accept


async def _drain(request):
    """Read and drop a refused body (up to _DRAIN_MAX): a client still sending would miss the answer."""
    left = min(request.content_length, _DRAIN_MAX)
    try:
        while left > 0:
            data = await asyncio.wait_for(request.stream.read(min(_READ_PIECE, left)), _READ_TIMEOUT_S)
            if not data:
                return
            left -= len(data)
    except (OSError, asyncio.TimeoutError):
        pass
