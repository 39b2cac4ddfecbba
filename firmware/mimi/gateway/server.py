# The WebSocket gateway: the web chat page at /, the `websocket` channel at /ws (token, 4 clients).
import asyncio
import os

from microdot import Response

from mimi import platform
from mimi.bus.message import Message
from mimi.gateway import auth, history, protocol
from mimi.gateway.web import Web
from mimi.gateway.websocket import with_websocket
from mimi.platform import const
from mimi.safety import confirm

CHANNEL = "websocket"
CLIENTS_MAX = const(4)
SEND_TIMEOUT_S = const(10)  # a client that takes longer to accept a frame is hung up on
PAGE_CHUNK = const(1024)  # the page is streamed from flash in pieces this big
_RETRY_FIRST_S = const(2)
_RETRY_MAX_S = const(60)
_BIND_POLL_S = 0.05
_PAGE_NAME = "index.html"


def _exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


async def _refuse(request, status, text, header):
    # Written by hand: WebSocket clients want HTTP/1.1 and microdot answers HTTP/1.0.
    body = (text + "\n").encode()
    head = "HTTP/1.1 {}\r\n{}\r\nContent-Type: text/plain; charset=utf-8\r\n" \
        "Content-Length: {}\r\nConnection: close\r\n\r\n".format(status, header, len(body))
    await request.sock[1].awrite(head.encode() + body)
    return Response.already_handled


class _Client:
    __slots__ = ("ws", "chat_id", "lock")

    def __init__(self, ws, chat_id):
        self.ws = ws
        self.chat_id = chat_id
        self.lock = asyncio.Lock()  # one frame at a time: agent, dispatcher and reader all send


class Gateway:
    """Service (run) and channel (on_delta, send) in one; App wiring: Gateway(app)."""

    def __init__(self, app):
        self.app = app
        self.clients = []
        self.admitted = 0  # /ws requests past the checks: upgrading or connected
        self.port = None  # the port listened on now
        self._next_id = 1
        self._restart = False
        self._serve_ws = with_websocket(self._session)
        self.uploads = None  # web chat attachments (gateway/uploads.py), made at the first upload
        self.web = self._routes()
        auth.current(app.config)  # first boot: make the token now, so ws_token can show it
        app.channels[CHANNEL] = self
        app.services.append(self)
        add = app.console.commands.add
        add("ws_token", self.cmd_token, "ws_token", 0, 0,
            "show the gateway token and the web chat address")
        add("set_ws_token", self.cmd_set_token, "set_ws_token <token|off>", 1, 1,
            "change the gateway token (off: no token needed)")
        add("set_ws_port", self.cmd_set_port, "set_ws_port <port>", 1, 1,
            "gateway TCP port (saved; the gateway moves at once)")
        self._status = app.console.commands.table["status"][0]
        add("status", self.cmd_status, "status", 0, 0, "what is configured, connected and running")

    # -- HTTP --
    def _routes(self):
        web = Web()
        web.get("/")(self._page)
        web.route("/ws")(self._ws)
        web.post("/upload")(self._upload)
        web.get("/attach.js")(self._attach_script)
        return web

    async def _attach_script(self, request):
        path = self.app.www_dir + "/attach.js"  # the web chat's attachments, in a file of their own
        if not _exists(path):
            return Response("", 404)
        response = Response.send_file(path, content_type="application/javascript; charset=utf-8")
        response.send_file_buffer_size = PAGE_CHUNK
        response.headers["Cache-Control"] = "no-cache"
        return response

    async def _upload(self, request):
        from mimi.gateway.uploads import Uploads

        if self.uploads is None:
            self.uploads = Uploads(self.app)
        return await self.uploads.receive(request)

    async def _page(self, request):
        path = self.app.www_dir + "/" + _PAGE_NAME
        if _exists(path):
            response = Response.send_file(path, content_type="text/html; charset=utf-8")
            response.send_file_buffer_size = PAGE_CHUNK
            response.headers["Cache-Control"] = "no-cache"
            return response
        return Response("The web chat page is missing: copy www/index.html to the flash.\n", 404)

    async def _ws(self, request):
        if not auth.admits(self.app.config, request):
            return await _refuse(request, "401 Unauthorized",
                                 "gateway token missing or wrong: add ?token=<token> "
                                 "(the console command ws_token shows it)",
                                 'WWW-Authenticate: Bearer realm="mimi"')
        if self.admitted >= CLIENTS_MAX:
            print("gateway: refused a client: {} are connected already".format(CLIENTS_MAX))
            return await _refuse(request, "503 Service Unavailable",
                                 "too many clients (at most {}); try again later".format(
                                     CLIENTS_MAX), "Retry-After: 10")
        if (request.headers.get("Upgrade") or "").lower() != "websocket":
            return await _refuse(request, "426 Upgrade Required",
                                 "this is the WebSocket endpoint: connect with a WebSocket client",
                                 "Upgrade: websocket")
        self.admitted += 1  # no await since the check above: no other request can slip in between
        try:
            return await self._serve_ws(request)
        finally:
            self.admitted -= 1

    async def _session(self, request, ws):
        client = _Client(ws, self._new_chat_id())
        self.clients.append(client)
        print("gateway: client connected as {} ({} of {})".format(
            client.chat_id, len(self.clients), CLIENTS_MAX))
        try:
            await self._deliver(client, protocol.hello(client.chat_id))
            while client in self.clients:  # receive() raises once the connection is closed
                await self._on_frame(client, await ws.receive())
        finally:
            if client in self.clients:
                self.clients.remove(client)
            print("gateway: {} disconnected".format(client.chat_id))

    async def _on_frame(self, client, data):
        try:
            kind, chat_id, content = protocol.parse_frame(data)
        except protocol.BadFrame as exc:
            await self._deliver(client, protocol.error(client.chat_id, str(exc)))
            return
        if kind == "confirm":
            await self._on_answer(client, chat_id, content)
            return
        if chat_id is not None:
            client.chat_id = chat_id  # the client's chat from now on
        if kind == "history":
            await self._on_history(client)
            return
        if kind == "attach":
            await self._on_attach(client, content[0], content[1])
            return
        for other in self._clients_of(client.chat_id):  # the chat's other tabs show it too
            if other is not client:
                await self._deliver(other, protocol.user(client.chat_id, content))
        await self.app.bus.inbound.put(Message(CHANNEL, client.chat_id, content))

    async def _on_attach(self, client, upload_id, caption):
        from mimi.agent import attachments

        item = self.uploads.take(upload_id) if self.uploads is not None else None
        if item is None:
            await self._deliver(client, protocol.error(client.chat_id, "That attachment is no longer on the "
                                                       "device; please attach it again."))
            return
        item["caption"] = caption
        for other in self._clients_of(client.chat_id):
            if other is not client:
                await self._deliver(other, protocol.user(client.chat_id, attachments.placeholder(caption, item)))
        await self.app.bus.inbound.put(Message(CHANNEL, client.chat_id, attachments.question(caption, item),
                                               {"media": item}))

    async def _on_history(self, client):
        try:
            frame = history.frame(self.app.sessions, CHANNEL, client.chat_id)
        except (OSError, ValueError) as exc:  # an unreadable file: the chat still works
            print("gateway: could not read the history of {} ({})".format(client.chat_id, exc))
            frame = protocol.error(client.chat_id, "The device could not read this chat's history.")
        await self._deliver(client, frame)

    def _new_chat_id(self):
        # ws_<n>, skipping any n with a saved session or a client: a newcomer starts afresh
        while True:
            chat_id = "ws_{}".format(self._next_id)
            self._next_id += 1
            if not self._clients_of(chat_id) and not self.app.sessions.exists(CHANNEL, chat_id):
                return chat_id

    # -- confirmation questions (safety/policy.py asks, a confirm frame answers) --
    async def confirm(self, question, seconds):
        """Send a confirm frame to the chat's clients; the first answer counts; then a confirmed frame."""
        if not await self._to_chat(question.chat_id, protocol.confirm(question.chat_id, question)):
            return confirm.DENIED  # nobody there to ask
        outcome = await question.wait(seconds)
        await self._to_chat(question.chat_id, protocol.confirmed(question.chat_id, question.id, outcome))
        return outcome

    async def _on_answer(self, client, qid, approve):
        policy = getattr(self.app, "policy", None)
        question = policy.questions.get(qid) if policy is not None else None
        if question is None or question.outcome is not None or question.channel != CHANNEL \
                or question.chat_id != client.chat_id:
            await self._deliver(client, protocol.notice(client.chat_id, "That question is no longer open "
                                                        "(already answered or expired)."))
            return
        question.settle(confirm.APPROVED if approve else confirm.DENIED)

    # -- the websocket channel --
    async def on_delta(self, chat_id, text):
        await self._to_chat(chat_id, protocol.token(chat_id, text))

    async def on_tool(self, chat_id, name):
        await self._to_chat(chat_id, protocol.tool(chat_id, name))

    async def send(self, message):
        meta = message.meta or {}
        if meta.get("kind") in ("report", "notice"):
            frame = protocol.notice(message.chat_id, message.content)
        elif meta.get("kind") == "error":
            frame = protocol.error(message.chat_id, message.content)
        else:
            frame = protocol.response(message.chat_id, message.content)
        if not await self._to_chat(message.chat_id, frame):
            print("gateway: reply for {} dropped: no client is connected to that chat "
                  "(it is saved in the session)".format(message.chat_id))

    def _clients_of(self, chat_id):
        return [client for client in self.clients if client.chat_id == chat_id]

    async def _to_chat(self, chat_id, frame):
        delivered = 0
        for client in self._clients_of(chat_id):
            if await self._deliver(client, frame):
                delivered += 1
        return delivered

    async def _deliver(self, client, frame):
        try:
            async with client.lock:
                await asyncio.wait_for(client.ws.send(frame), SEND_TIMEOUT_S)
            return True
        except Exception as exc:  # a gone or stuck client must never stall the agent
            print("gateway: could not reach {} ({}); hanging up".format(
                client.chat_id, type(exc).__name__))
            await self._hang_up(client)
            return False

    async def _hang_up(self, client):
        if client in self.clients:
            self.clients.remove(client)
        try:
            await client.ws.request.sock[1].aclose()  # the reader then ends too
        except Exception:
            pass

    # -- the service --
    async def run(self):
        delay = _RETRY_FIRST_S
        while True:
            port = self.app.config.get("gw_config", "ws_port")
            self._restart = False
            self.web.server = None
            failed = []
            task = asyncio.create_task(self._listen(port, failed))
            while self.web.server is None and not failed:
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
        try:
            await self.web.start_server(host="0.0.0.0", port=port)
        except OSError as exc:
            failed.append(exc)

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
        platform.console_write("  Gateway: {}, {} of {} clients\n".format(
            place, len(self.clients), CLIENTS_MAX))

    async def cmd_token(self):
        token = auth.current(self.app.config)
        if token == auth.OFF:
            platform.console_write("gateway token: off (anyone on the network may chat)\n"
                                   "web chat: {}\n".format(self.address()))
            return
        platform.console_write("gateway token: {}\nweb chat: {}?token={}\n".format(
            token, self.address(), token))

    async def cmd_set_token(self, token):
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
            self.web.shutdown()
