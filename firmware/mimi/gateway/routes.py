# The gateway's routes: the chat page, its attachments script, uploads, /ws and /mcp (imported at the first
# connection).
from microdot import Response

from mimi.gateway.web import Web, refuse
from mimi.platform import const
from mimi.storage import files

PAGE_CHUNK = const(1024)  # the page is streamed from flash in pieces this big
_PAGE_NAME = "index.html"
_SHORT_OF_MEMORY = "the device is short of memory; try again later"


def _file(path, content_type):
    response = Response.send_file(path, content_type=content_type)
    response.send_file_buffer_size = PAGE_CHUNK
    response.headers["Cache-Control"] = "no-cache"
    return response


class Routes(Web):
    """microdot with the gateway's routes, for the Gateway (gateway/server.py) that listens."""

    def __init__(self, gateway):
        super().__init__()
        self.gateway = gateway
        self.mcp = None  # the MCP server (mcp/server.py), made at the first /mcp request
        self.get("/")(self._page)
        self.route("/ws")(self._ws)
        self.post("/upload")(self._upload)
        self.get("/attach.js")(self._attach_script)
        self.route("/mcp", methods=["GET", "POST", "DELETE"])(self._mcp)

    async def _page(self, request):
        path = self.gateway.app.www_dir + "/" + _PAGE_NAME
        if files.exists(path):
            return _file(path, "text/html; charset=utf-8")
        return Response("The web chat page is missing: copy www/index.html to the flash.\n", 404)

    async def _attach_script(self, request):
        path = self.gateway.app.www_dir + "/attach.js"  # the web chat's attachments, in a file of their own
        if not files.exists(path):
            return Response("", 404)
        return _file(path, "application/javascript; charset=utf-8")

    async def _upload(self, request):
        gateway = self.gateway
        if gateway.uploads is None:
            try:
                from mimi.gateway.uploads import Uploads

                gateway.uploads = Uploads(gateway.app)
            except MemoryError:  # before anything was read: the client is told, nothing is half done
                print("gateway: no memory to take an upload; refused it")
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
                print("gateway: no memory to serve a WebSocket client; refused it")
                return await refuse(request, "503 Service Unavailable", _SHORT_OF_MEMORY,
                                    "Retry-After: 10")
        return await gateway.sessions.serve(request)

    async def _mcp(self, request):
        if self.mcp is None:
            try:
                from mimi.mcp.server import Server

                self.mcp = Server(self.gateway.app)
            except MemoryError:  # nothing done yet: the client may try again
                print("gateway: no memory to load the MCP server; refused a client")
                return Response('{"error": "' + _SHORT_OF_MEMORY + '"}', 503,
                                {"Content-Type": "application/json", "Retry-After": "10"})
        return await self.mcp.serve(request)
