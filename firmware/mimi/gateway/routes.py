# The gateway's routes: the web app's page and scripts, uploads, /ws and /mcp (imported at the first
# connection). The page's files are served gzip-compressed when the build compressed them (name.gz), with a
# strong ETag: an unchanged file is a 304.
import binascii
import hashlib
import json

from microdot import Response

from mimi.gateway import auth, guard
from mimi.gateway.web import Web, refuse
from mimi.platform import const, log
from mimi.storage import files

PAGE_CHUNK = const(1024)  # the page is streamed from flash in pieces this big
_PAGE_NAME = "index.html"
_SHORT_OF_MEMORY = "the device is short of memory; try again later"
_SCRIPT = "application/javascript; charset=utf-8"
_ETAG_HEX = const(16)  # hex digits of the file's SHA-256 in its ETag
_WEB_CHAT = ("/ws", "/upload")  # the token's and the board's own pages' (Origin)
_TAKES_BODY = ("/upload", "/mcp")  # any other route is sent a body only by a client up to no good: 413, unread
_JSONRPC_INVALID_REQUEST = const(-32600)  # mcp/server_rpc.py's INVALID_REQUEST: a refused client never loads it
_OTHER_SITE = "requests from web pages of other sites are refused (gw_config.origins lists other pages that may)"
_WRONG_TOKEN = "gateway token missing or wrong"
_BEARER = 'Bearer realm="mimi"'


def _file(path, content_type, headers):
    response = Response.send_file(path, content_type=content_type)
    response.send_file_buffer_size = PAGE_CHUNK
    response.headers.update(headers)
    return response


def _etag(path):
    digest, buf = hashlib.sha256(), bytearray(PAGE_CHUNK)
    with open(path, "rb") as f:
        while True:
            count = f.readinto(buf)
            if not count:
                break
            digest.update(buf if count == PAGE_CHUNK else buf[:count])
    return '"' + binascii.hexlify(digest.digest()).decode()[:_ETAG_HEX] + '"'


def _matches(request, etag):
    given = request.headers.get("If-None-Match") or ""
    return etag in [tag.strip() for tag in given.split(",")]


class Routes(Web):
    """microdot with the gateway's routes, for the Gateway (gateway/server.py) that listens."""

    def __init__(self, gateway):
        super().__init__()
        self.gateway = gateway
        self.mcp = None  # the MCP server (mcp/server.py), made at the first /mcp request
        self.etags = {}  # path -> (size, ETag) of the page's files served so far
        self.get("/")(self._page)
        self.route("/ws")(self._ws)
        self.post("/upload")(self._upload)
        self.get("/attach.js")(self._attach_script)
        self.get("/views.js")(self._views_script)
        self.get("/favicon.svg")(self._icon)
        self.get("/favicon.ico")(self._icon)  # asked for by name whatever the page links
        self.route("/mcp", methods=["GET", "POST", "DELETE"])(self._mcp)

    streamed = ("/upload",)  # its body goes to flash a piece at a time, never read whole (Web)

    async def screen(self, request):
        """On the request's head, before a byte of its body is read (Web.handle_request), the refused connection
        then closed: a name the board does not answer to is 421 whatever the Origin (DNS rebinding); /ws, /upload
        and /mcp take no request of another site's page (403) and none without their token (401); a route that
        takes no body is sent none (413)."""
        config = self.gateway.app.config
        headers, path = request.headers, request.path
        if not guard.host_allowed(config, headers):
            log("gateway: refused a request for a name that is not the board's (Host)")
            return await refuse(request, "421 Misdirected Request", "this board does not answer to that name "
                                "(gw_config.hosts lists other names it answers to)", "Vary: Host")
        if path == "/mcp":  # as the MCP server checks it, answered here: a refused client never loads the server
            if not guard.origin_allowed(config, headers, True):
                return _rpc_refused(403, "Forbidden", "Forbidden: " + _OTHER_SITE, {"Vary": "Origin"})
            token = guard.mcp_token(config)
            if token != auth.OFF and not auth.carries(request, token):
                return _rpc_refused(401, "Unauthorized", guard.MCP_TOKEN_WRONG, {"WWW-Authenticate": _BEARER})
        elif path in _WEB_CHAT:
            if not guard.origin_allowed(config, headers):
                log("gateway: refused a request from a page of another site (Origin)")
                return await refuse(request, "403 Forbidden", _OTHER_SITE, "Vary: Origin")
            if guard.client_role(config, request) is None:
                if path == "/upload":  # the page reads an upload's answer as JSON
                    return Response(json.dumps({"error": _WRONG_TOKEN}), 401,
                                    {"Content-Type": "application/json", "WWW-Authenticate": _BEARER},
                                    reason="Unauthorized")
                return await refuse(request, "401 Unauthorized", _WRONG_TOKEN + ": add ?token=<token> (the "
                                    "console command ws_token shows it)", "WWW-Authenticate: " + _BEARER)
        if request.content_length and path not in _TAKES_BODY:
            return await refuse(request, "413 Payload Too Large", "this address takes no request body")
        return None

    def _asset(self, request, name, content_type):
        """The page's file `name` (its .gz when built), a 304 when the browser has it; None if missing."""
        path = self.gateway.app.www_dir + "/" + name
        headers = {"Cache-Control": "no-cache", "Vary": "Accept-Encoding"}
        if files.exists(path + ".gz"):  # every browser takes gzip; the build keeps only this copy
            path += ".gz"
            headers["Content-Encoding"] = "gzip"
        size = files.size(path)
        if size < 0:
            return None
        known = self.etags.get(path)
        if known is None or known[0] != size:
            known = self.etags[path] = (size, _etag(path))
        headers["ETag"] = known[1]
        if _matches(request, known[1]):
            return Response("", 304, headers)
        headers["Content-Length"] = str(size)  # known: the browser shows progress and keeps the connection
        return _file(path, content_type, headers)

    async def _page(self, request):
        found = self._asset(request, _PAGE_NAME, "text/html; charset=utf-8")
        return found or Response("The web chat page is missing: copy www/index.html to the flash.\n", 404)

    async def _attach_script(self, request):
        return self._asset(request, "attach.js", _SCRIPT) or Response("", 404)  # the chat's attachments

    async def _views_script(self, request):
        return self._asset(request, "views.js", _SCRIPT) or Response("", 404)  # status, settings, ... views

    async def _icon(self, request):
        return self._asset(request, "favicon.svg", "image/svg+xml") or Response("", 404)

    async def _upload(self, request):
        gateway = self.gateway
        if gateway.uploads is None:
            try:
                from mimi.gateway.uploads import Uploads

                gateway.uploads = Uploads(gateway)
            except MemoryError:  # before anything was read: the client is told, nothing is half done
                log("gateway: no memory to take an upload; refused it")
                return Response('{"error": "' + _SHORT_OF_MEMORY + '"}', 503,
                                {"Content-Type": "application/json"})
        return await gateway.uploads.receive(request)

    async def _ws(self, request):
        gateway = self.gateway
        if gateway.sessions is None:
            try:
                from mimi.gateway.clients import Clients

                gateway.sessions = Clients(gateway)  # the `websocket` channel from now on
            except MemoryError:  # before the token check and the upgrade: a plain HTTP refusal
                log("gateway: no memory to serve a WebSocket client; refused it")
                return await refuse(request, "503 Service Unavailable", _SHORT_OF_MEMORY,
                                    "Retry-After: 10")
        return await gateway.sessions.serve(request)

    async def _mcp(self, request):  # the screen checked its page and its token on the head
        if self.mcp is None:
            try:
                from mimi.mcp.server import Server

                self.mcp = Server(self.gateway.app)
            except MemoryError:  # nothing done yet: the client may try again
                log("gateway: no memory to load the MCP server; refused a client")
                return Response('{"error": "' + _SHORT_OF_MEMORY + '"}', 503,
                                {"Content-Type": "application/json", "Retry-After": "10"})
        return await self.mcp.serve(request)


def _rpc_refused(status, reason, message, headers):
    """/mcp's refusal as a JSON-RPC error, as mcp/server_rpc.py writes one."""
    headers["Content-Type"] = "application/json"
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": _JSONRPC_INVALID_REQUEST, "message": message}}
    return Response(json.dumps(body).encode(), status, headers, reason=reason)
