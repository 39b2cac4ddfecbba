# The WebSocket gateway: the web chat page at /, the `websocket` channel at /ws (token, 4 clients).
import asyncio
import os

from mimi import platform
from mimi.platform import const

CHANNEL = "websocket"
CLIENTS_MAX = const(4)
PAGE_CHUNK = const(1024)  # the page is streamed from flash in pieces this big
_RETRY_FIRST_S = const(2)
_RETRY_MAX_S = const(60)
_BIND_POLL_S = 0.05
_PAGE_NAME = "index.html"
_TOKEN_NS = "gw_config"  # gateway/auth.py NS and KEY: read here so an idle gateway needs no auth module
_TOKEN_KEY = "ws_token"
_SHORT_OF_MEMORY = "the device is short of memory; try again later"
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\nws_token\tws_token\t0\t0\tshow the gateway token and the web chat address\tapp.gateway.cmd_token"
    "\nset_ws_token\tset_ws_token <token|off>\t1\t1\tchange the gateway token (off: no token needed)"
    "\tapp.gateway.cmd_set_token"
    "\nset_ws_port\tset_ws_port <port>\t1\t1\tgateway TCP port (saved; the gateway moves at once)"
    "\tapp.gateway.cmd_set_port"
    "\n"
)


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


class Gateway:
    """Service (run) and channel (on_delta, send) in one; App wiring: Gateway(app).

    The port is listened on from boot by asyncio itself; microdot and the routes (gateway/web.py) are
    loaded at the first connection, the WebSocket sessions (gateway/clients.py and what it imports) at
    the first /ws request, uploads at the first upload: an idle gateway is a listening socket, and this.
    """

    def __init__(self, app):
        self.app = app
        self.port = None  # the port listened on now
        self._restart = False
        self.sessions = None  # gateway/clients.py Clients, made at the first /ws request
        self.uploads = None  # web chat attachments (gateway/uploads.py), made at the first upload
        self.server = None  # the listening asyncio server
        self.web = None  # microdot with the routes (gateway/web.py), made at the first connection
        if not app.config.get(_TOKEN_NS, _TOKEN_KEY):
            from mimi.gateway import auth

            auth.current(app.config)  # first boot: make the token now, so ws_token can show it
        app.channels[CHANNEL] = self
        app.services.append(self)
        commands = app.console.commands
        commands.add_lines(_COMMANDS)
        self._status = commands.table["status"][0]
        commands.add("status", self.cmd_status, "status", 0, 0, "what is configured, connected and running")

    # -- HTTP --
    def _routes(self):
        from mimi.gateway.web import Web

        web = Web()
        web.get("/")(self._page)
        web.route("/ws")(self._ws)
        web.post("/upload")(self._upload)
        web.get("/attach.js")(self._attach_script)
        return web

    async def _serve(self, reader, writer):
        # Every connection the port accepts: microdot and the routes are loaded at the first one.
        if self.web is None:
            try:
                self.web = self._routes()
            except MemoryError:  # nothing read yet: the client sees the connection closed, nothing half done
                print("gateway: no memory to load the web server; hung up on a client")
                writer.close()
                return
        await self.web.serve(reader, writer)

    async def _attach_script(self, request):
        from microdot import Response

        path = self.app.www_dir + "/attach.js"  # the web chat's attachments, in a file of their own
        if not _exists(path):
            return Response("", 404)
        response = Response.send_file(path, content_type="application/javascript; charset=utf-8")
        response.send_file_buffer_size = PAGE_CHUNK
        response.headers["Cache-Control"] = "no-cache"
        return response

    async def _upload(self, request):
        from microdot import Response

        if self.uploads is None:
            try:
                from mimi.gateway.uploads import Uploads

                self.uploads = Uploads(self.app)
            except MemoryError:  # before anything was read: the client is told, nothing is half done
                print("gateway: no memory to take an upload; refused it")
                return Response('{"error": "' + _SHORT_OF_MEMORY + '"}', 503,
                                {"Content-Type": "application/json"})
        return await self.uploads.receive(request)

    async def _page(self, request):
        from microdot import Response

        path = self.app.www_dir + "/" + _PAGE_NAME
        if _exists(path):
            response = Response.send_file(path, content_type="text/html; charset=utf-8")
            response.send_file_buffer_size = PAGE_CHUNK
            response.headers["Cache-Control"] = "no-cache"
            return response
        return Response("The web chat page is missing: copy www/index.html to the flash.\n", 404)

    async def _ws(self, request):
        if self.sessions is None:
            try:
                from mimi.gateway.clients import Clients

                self.sessions = Clients(self)
            except MemoryError:  # before the token check and the upgrade: a plain HTTP refusal
                from mimi.gateway.web import refuse

                print("gateway: no memory to serve a WebSocket client; refused it")
                return await refuse(request, "503 Service Unavailable", _SHORT_OF_MEMORY,
                                    "Retry-After: 10")
        return await self.sessions.serve(request)

    # -- the websocket channel (no client has come yet while self.sessions is None) --
    async def confirm(self, question, seconds):
        """Send a confirm frame to the chat's clients; the first answer counts; then a confirmed frame."""
        if self.sessions is None:
            from mimi.safety.confirm import DENIED

            return DENIED  # nobody there to ask
        return await self.sessions.confirm(question, seconds)

    async def on_delta(self, chat_id, text):
        if self.sessions is not None:
            await self.sessions.on_delta(chat_id, text)

    async def on_tool(self, chat_id, name):
        if self.sessions is not None:
            await self.sessions.on_tool(chat_id, name)

    async def send(self, message):
        if self.sessions is None or not await self.sessions.send(message):
            print("gateway: reply for {} dropped: no client is connected to that chat "
                  "(it is saved in the session)".format(message.chat_id))

    # -- the service --
    async def run(self):
        delay = _RETRY_FIRST_S
        while True:
            port = self.app.config.get("gw_config", "ws_port")
            self._restart = False
            self.server = None
            failed = []
            task = asyncio.create_task(self._listen(port, failed))
            while self.server is None and not failed:
                await asyncio.sleep(_BIND_POLL_S)
            if failed:
                print("gateway: cannot listen on port {} ({}); trying again in {} s".format(
                    port, failed[0], delay))
                await asyncio.sleep(delay)
                delay = min(delay * 2, _RETRY_MAX_S)
                continue
            delay = _RETRY_FIRST_S
            self.port = port
            print("gateway: web chat on {} (ws_token shows the token)".format(self.address()))
            await task
            self.port = None
            if not self._restart:
                print("gateway: stopped")
                return

    async def _listen(self, port, failed):
        # As microdot's start_server listens, with the connections handed to _serve.
        try:
            self.server = await asyncio.start_server(self._serve, "0.0.0.0", port)
        except OSError as exc:
            failed.append(exc)
            return
        if hasattr(self.server, "serve_forever"):  # CPython
            try:
                await self.server.serve_forever()
            except asyncio.CancelledError:  # close() ends it
                pass
        await self.server.wait_closed()

    def address(self):
        ip = "127.0.0.1"
        try:
            ip = self.app.wifi.wlan.ifconfig()[0]
        except (AttributeError, OSError):
            pass
        return "http://{}:{}/".format(ip, self.port or self.app.config.get("gw_config", "ws_port"))

    # -- console commands --
    async def cmd_status(self):
        await self._status()
        if self.port is None:
            place = "not listening"
        else:
            place = "listening on port {}".format(self.port)
        clients = len(self.sessions.clients) if self.sessions is not None else 0
        platform.console_write("  Gateway: {}, {} of {} clients\n".format(place, clients, CLIENTS_MAX))

    async def cmd_token(self):
        from mimi.gateway import auth

        token = auth.current(self.app.config)
        if token == auth.OFF:
            platform.console_write("gateway token: off (anyone on the network may chat)\n"
                                   "web chat: {}\n".format(self.address()))
            return
        platform.console_write("gateway token: {}\nweb chat: {}?token={}\n".format(
            token, self.address(), token))

    async def cmd_set_token(self, token):
        from mimi.gateway import auth

        self.app.config.set(auth.NS, auth.KEY, auth.check_new(token))
        if token == auth.OFF:
            platform.console_write("gateway token off: anyone who reaches port {} may chat\n"
                                   .format(self.app.config.get("gw_config", "ws_port")))
        else:
            platform.console_write("gateway token saved; new connections need it "
                                   "(clients already connected stay)\n")

    async def cmd_set_port(self, port):
        config = self.app.config
        config.set("gw_config", "ws_port", port)
        wanted = config.get("gw_config", "ws_port")
        saved = int(port)  # a whole number: config.set checked it
        if wanted != saved:
            platform.console_write("gw_config.ws_port = {} saved; this run keeps port {} from the "
                                   "command line (--ws-port)\n".format(saved, wanted))
        elif self.port is None or self.port == wanted:
            platform.console_write("gw_config.ws_port = {} (saved)\n".format(wanted))
        else:
            platform.console_write("gw_config.ws_port = {} (saved; the gateway moves now; "
                                   "connected clients stay)\n".format(wanted))
            self._restart = True
            self.server.close()
