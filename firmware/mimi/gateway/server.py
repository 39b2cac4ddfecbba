# The WebSocket gateway: the web chat page at /, the `websocket` channel at /ws (token, 4 clients).
import asyncio

from mimi.channels import Channel
from mimi.gateway import CHANNEL, DROPPED, TOKEN_KEY, TOKEN_NS
from mimi.health import memory_errors
from mimi.platform import const, log

_RETRY_FIRST_S = const(2)
_RETRY_MAX_S = const(60)
_BIND_POLL_S = 0.05
# The console commands (channels/commands.py add_lines), their code (gateway/commands.py) imported when one
# is typed; status is the console's, with the gateway's line added. A str constant stays in flash.
COMMANDS = (
    "\nstatus\tstatus\t0\t0\twhat is configured, connected and running"
    "\tmimi.gateway.commands:cmd_status(app.gateway)"
    "\nws_token\tws_token\t0\t0\tshow the gateway token and the web chat address"
    "\tmimi.gateway.commands:cmd_token(app.gateway)"
    "\nset_ws_token\tset_ws_token <token|off>\t1\t1\tchange the gateway token (off: no token needed)"
    "\tmimi.gateway.commands:cmd_set_token(app.gateway)\t1"
    "\nset_ws_port\tset_ws_port <port>\t1\t1\tgateway TCP port (saved; the gateway moves at once)"
    "\tmimi.gateway.commands:cmd_set_port(app.gateway)"
    "\nws_role\tws_role [role]\t0\t1\trole of web chat clients with the token: owner (default), operator or observer"
    "\tmimi.gateway.commands:cmd_role(app.gateway)"
    "\nws_open_role\tws_open_role [role]\t0\t1\trole of web chat clients while the token is off: observer "
    "(default), operator or owner\tmimi.gateway.commands:cmd_open_role(app.gateway)"
    "\n"
)


class Gateway(Channel):
    """Service (run) and the `websocket` channel (its clients', once one has come); app.py adds it and its
    console commands (COMMANDS).

    The port is listened on from boot by asyncio itself; microdot and the routes (gateway/routes.py) are
    loaded at the first connection, the WebSocket sessions (gateway/clients.py) at the first /ws request,
    uploads at the first upload, the console commands (gateway/commands.py) at the first one typed: an idle
    gateway is a listening socket, and this.
    """

    name = CHANNEL
    streams = True

    def __init__(self, app):
        self.app = app
        self.port = None  # the port listened on now
        self._restart = False  # restart(): listen again when the server closes
        self.sessions = None  # gateway/clients.py Clients, made at the first /ws request
        self.uploads = None  # web chat attachments (gateway/uploads.py), made at the first upload
        self.server = None  # the listening asyncio server
        self.web = None  # microdot with the routes (gateway/routes.py), made at the first connection
        if not app.config.get(TOKEN_NS, TOKEN_KEY):
            from mimi.gateway import auth

            auth.current(app.config)  # first boot: make the token now, so ws_token can show it
        self.console_status = app.console.commands.table["status"][0]  # the console's, run before our line

    async def _serve(self, reader, writer):
        # Every connection the port accepts: microdot and the routes are loaded at the first one.
        if self.web is None:
            try:
                from mimi.gateway.routes import Routes

                self.web = Routes(self)
            except MemoryError:  # nothing read yet: the client sees the connection closed, nothing half done
                log("gateway: no memory to load the web server; hung up on a client")
                writer.close()
                return
        await self.web.serve(reader, writer)

    # -- the websocket channel: its clients' (gateway/clients.py), once one has come --
    async def confirm(self, question, seconds):
        if self.sessions is None:
            from mimi.safety.confirm import DENIED

            return DENIED  # nobody there to ask
        return await self.sessions.confirm(question, seconds)

    async def send(self, message):
        if self.sessions is None:
            log(DROPPED.format(message.chat_id))
            return
        await self.sessions.send(message)

    async def on_delta(self, chat_id, text):
        if self.sessions is not None:
            await self.sessions.on_delta(chat_id, text)

    async def on_tool(self, chat_id, name):
        if self.sessions is not None:
            await self.sessions.on_tool(chat_id, name)

    # -- the service --
    async def run(self):
        backoff = None  # made at the first failure to listen: a listening gateway holds none
        while True:
            try:
                port = self.app.config.get("gw_config", "ws_port")
                self._restart = False
                self.server = None
                failed = []
                task = asyncio.create_task(self._listen(port, failed))
                while self.server is None and not failed:
                    await asyncio.sleep(_BIND_POLL_S)
                if failed:
                    from mimi.net.backoff import Backoff

                    backoff = backoff or Backoff(_RETRY_FIRST_S, _RETRY_MAX_S)
                    wait = backoff.next()
                    log("gateway: cannot listen on port {} ({}); trying again in {} s".format(
                        port, failed[0], wait))
                    await asyncio.sleep(wait)
                    continue
                backoff = None
                self.port = port
                log("gateway: web chat on {} (ws_token shows the token)".format(self.address()))
                await task
                self.port = None
                if not self._restart:
                    log("gateway: stopped")
                    return
            except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
                memory_errors.short("gateway", exc)
                await asyncio.sleep(memory_errors.AGAIN_S)

    def restart(self):
        """Listen again, on the port saved now; the connected clients stay."""
        self._restart = True
        self.server.close()

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
