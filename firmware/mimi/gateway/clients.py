# The web chat's connected clients: WebSocket sessions, their frames, and replies sent to them.
# Imported at the first /ws request (gateway/server.py), so an idle gateway holds none of this.
#
# A client acts with a role (gateway/guard.py: ws_role with the token, ws_open_role while it is off). The chats of a
# client that is not the owner are kept apart from the owner's: on the board its chat "web_1" is "<role>.web_1" (a
# "." no client can name), so it can neither join nor read another role's chats; its frames name the chat as the
# client does.
#
# A connection is only as good as the rules now (config.subscribe, whatever path changed them: the console, the
# page's Settings, MCP, config_reset): a new token, or the token switched off or on, closes every connection opened
# under the old one with 1008 and the reason; a new ws_role or ws_open_role reaches its live clients at once (a new
# hello frame names it, and their chats move to the new role's).
import asyncio
import binascii
import os

from mimi import platform
from mimi.bus.message import Message
from mimi.gateway import CHANNEL, CLIENTS_MAX, DROPPED, TOKEN_KEY, TOKEN_NS, auth, guard, history, protocol
from mimi.gateway.web import refuse
from mimi.gateway.websocket import CLOSE_POLICY_VIOLATION, with_websocket
from mimi.platform import const, log
from mimi.safety import roles

SEND_TIMEOUT_S = const(10)  # a client that takes longer to accept a frame is hung up on
_ID_RANDOM_BYTES = const(4)  # a non-owner client's own chat id: ws_<8 hex digits>, not guessable
_UPLOAD_KEY_BYTES = const(12)  # a connection's upload key (its hello frame): what binds an upload to it
_CLOSE_WAIT_S = const(2)  # a closed client that does not answer the close frame is hung up on after this
# Close reasons (at most 123 bytes: a close frame's limit); the page shows them and asks for the token.
_TOKEN_CHANGED = "the gateway token changed: enter the new one (the device console command ws_token shows it)"
_TOKEN_OFF = "the gateway token was switched off: connect again (the device's rules for clients changed)"


class _Client:
    __slots__ = ("ws", "chat_id", "lock", "role", "address", "credential", "upload_key", "gone")

    def __init__(self, ws, role, address, credential):
        self.ws = ws
        self.chat_id = None  # the chat on the board (a non-owner's with its role's prefix)
        self.role = role
        self.address = address
        self.credential = credential  # the token it connected with (auth.credential; None: the token was off)
        self.upload_key = binascii.hexlify(os.urandom(_UPLOAD_KEY_BYTES)).decode()
        self.gone = False  # its session has ended
        self.lock = asyncio.Lock()  # one frame at a time: agent, dispatcher and reader all send

    def role_key(self):
        """The setting its role comes from: ws_role with a token, ws_open_role without."""
        return "ws_open_role" if self.credential is None else "ws_role"


def shown(chat_id):
    """A chat id as its clients name it: a non-owner's chat without its role's prefix."""
    at = chat_id.find(".")
    return chat_id[at + 1:] if at >= 0 else chat_id


class Clients:
    """The /ws endpoint, and what the `websocket` channel (the Gateway that made it at the first /ws request)
    does with its clients."""

    ping_after_s = 60  # a client silent this long is pinged (a browser's tab answers with a pong) ...
    silence_max_s = 300  # ... and one silent this long (no frame, no pong) is hung up on: its place is free again

    def __init__(self, gateway):
        self.gateway = gateway
        self.app = gateway.app
        self.clients = []
        self.admitted = 0  # /ws requests past the checks: upgrading or connected
        self._next_id = 1
        self._serve_ws = with_websocket(self._session)
        self._watch = None  # the task that pings silent clients, while any is connected
        self.app.config.subscribe(self._on_config)

    # -- the /ws endpoint --
    async def serve(self, request):
        role = guard.client_role(self.app.config, request)
        if role is None:
            return await refuse(request, "401 Unauthorized",
                                "gateway token missing or wrong: add ?token=<token> "
                                "(the console command ws_token shows it)",
                                'WWW-Authenticate: Bearer realm="mimi"')
        if self.admitted >= CLIENTS_MAX:
            log("gateway: refused a client: {} are connected already".format(CLIENTS_MAX))
            return await refuse(request, "503 Service Unavailable",
                                "too many clients (at most {}); try again later".format(
                                    CLIENTS_MAX), "Retry-After: 10")
        if (request.headers.get("Upgrade") or "").lower() != "websocket":
            return await refuse(request, "426 Upgrade Required",
                                "this is the WebSocket endpoint: connect with a WebSocket client",
                                "Upgrade: websocket")
        self.admitted += 1  # no await since the check above: no other request can slip in between
        request.g.role = role
        request.g.credential = self._credential_now()  # checked again once connected: the token may change meanwhile
        try:
            return await self._serve_ws(request)
        finally:
            self.admitted -= 1

    async def _session(self, request, ws):
        client = _Client(ws, request.g.role, guard.address(request), self._credential_now())
        if client.credential != request.g.credential:  # the token changed during the handshake
            await ws.close(CLOSE_POLICY_VIOLATION, self._why_closed())
            return
        client.role = guard.role(self.app.config, client.role_key())  # ... or the role
        client.chat_id = self._new_chat_id(client)
        self.clients.append(client)
        if self._watch is None:
            self._watch = asyncio.create_task(self._keep_alive())
        log("gateway: client connected as {} ({}; {} of {})".format(
            client.chat_id, client.role, len(self.clients), CLIENTS_MAX))
        try:
            await self._deliver(client, self._hello(client))
            while True:
                data = await ws.receive()  # raises once the connection is closed
                if client not in self.clients:  # closed meanwhile (hung up, a new token): its frames go nowhere
                    break
                await self._on_frame(client, data)
        finally:
            client.gone = True
            if client in self.clients:
                self.clients.remove(client)
            if self.gateway.uploads is not None:  # its uploads not yet sent are nobody's now
                self.gateway.uploads.forget(client.upload_key)
            log("gateway: {} disconnected".format(client.chat_id))

    def _hello(self, client):
        return protocol.hello(shown(client.chat_id), client.role, client.upload_key)

    def keyed(self, key):
        """The live client whose upload key this is (an upload's owner), or None."""
        for client in self.clients:
            if key and auth.same(key, client.upload_key):
                return client
        return None

    # -- the rules changed: every live connection gets them at once --
    def _credential_now(self):
        """The credential of the token in force (a blank one, about to be made anew, matches no connection)."""
        return auth.credential(self.app.config.get(TOKEN_NS, TOKEN_KEY))

    def _why_closed(self):
        return _TOKEN_OFF if self.app.config.get(TOKEN_NS, TOKEN_KEY) == auth.OFF else _TOKEN_CHANGED

    def _on_config(self, ns, key):
        # Called inside config.set(): the change applies to the list now, the frames follow in a task.
        if ns != TOKEN_NS:
            return
        if key == TOKEN_KEY:
            now = self._credential_now()
            stale = [client for client in self.clients if client.credential != now]
            for client in stale:
                self.clients.remove(client)  # nothing more is delivered to it, nothing it sends is taken
            if stale:
                asyncio.create_task(self._close(stale, self._why_closed()))
        elif key in ("ws_role", "ws_open_role"):
            moved = []
            for client in self.clients:
                role = guard.role(self.app.config, client.role_key())
                if role != client.role:
                    chat = shown(client.chat_id)
                    client.role = role
                    client.chat_id = _inside(client, chat)  # the owner's chat is no longer its own
                    moved.append(client)
            if moved:
                asyncio.create_task(self._tell_roles(moved))

    async def _close(self, clients, reason):
        """Close with 1008 and the reason (the page shows it); a client that does not answer the close frame is
        hung up on after _CLOSE_WAIT_S."""
        for client in clients:
            log("gateway: {} closed: {}".format(client.chat_id, reason.split(":")[0]))
            try:
                await asyncio.wait_for(client.ws.end(CLOSE_POLICY_VIOLATION, reason), SEND_TIMEOUT_S)
            except Exception:  # gone or stuck: hung up on below
                pass
        await asyncio.sleep(_CLOSE_WAIT_S)
        for client in clients:
            if not client.gone:
                await self._hang_up(client)

    async def _tell_roles(self, clients):
        for client in clients:
            log("gateway: {} acts as {} now".format(client.chat_id, client.role))
            await self._deliver(client, self._hello(client))

    async def _on_frame(self, client, data):
        try:
            kind, chat_id, content = protocol.parse_frame(data)
        except protocol.BadFrame as exc:
            await self._deliver(client, protocol.error(shown(client.chat_id), str(exc)))
            return
        if kind == "confirm":
            await self._on_answer(client, chat_id, content)
            return
        if kind == "view":  # the page's status, settings, memory, rules and usage views: the owner's
            if client.role != roles.OWNER:
                await self._deliver(client, protocol.error(shown(client.chat_id), "the web app's views (status, "
                                                           "settings, memory, rules, usage) are the owner's; this "
                                                           "client acts as {}".format(client.role)))
                return
            await self._on_view(client, chat_id, content)
            return
        if chat_id is not None:
            if client.role != roles.OWNER and len(client.role) + 1 + len(chat_id) > protocol.CHAT_ID_MAX:
                await self._deliver(client, protocol.error(shown(client.chat_id), "chat_id must be at most {} "
                                                           "characters".format(protocol.CHAT_ID_MAX - 9)))
                return
            client.chat_id = _inside(client, chat_id)  # the client's chat from now on
        if kind == "history":
            await self._on_history(client)
            return
        if kind == "attach":
            await self._on_attach(client, content[0], content[1])
            return
        for other in self._clients_of(client.chat_id):  # the chat's other tabs show it too
            if other is not client:
                await self._deliver(other, protocol.user(shown(client.chat_id), content))
        await self.app.deliver(Message(CHANNEL, client.chat_id, content, _meta(client)))

    async def _on_attach(self, client, upload_id, caption):
        from mimi.agent import attachments

        uploads = self.gateway.uploads
        item = uploads.take(upload_id, client.upload_key) if uploads is not None else None
        if item is None:  # gone, or another connection's: the same words, nothing told of others' uploads
            await self._deliver(client, protocol.error(shown(client.chat_id), "No such upload on this connection; "
                                                       "please attach the file again."))
            return
        item["caption"] = caption
        for other in self._clients_of(client.chat_id):
            if other is not client:
                await self._deliver(other, protocol.user(shown(client.chat_id),
                                                         attachments.placeholder(caption, item)))
        meta = _meta(client) or {}
        meta["media"] = item
        await self.app.bus.inbound.put(Message(CHANNEL, client.chat_id, attachments.question(caption, item), meta))

    async def _on_view(self, client, kind, frame):
        from mimi.gateway import views  # loaded when the page first opens a view other than the chat

        try:
            answer = await views.answer(self.app, kind, frame)
        except (ValueError, KeyError, TypeError) as exc:  # a frame without what its kind needs
            answer = protocol.error(shown(client.chat_id), "{} frame: {}".format(kind, exc))
        except MemoryError:
            answer = protocol.error(shown(client.chat_id), "the device is short of memory; try again later")
        await self._deliver(client, answer)

    async def _on_history(self, client):
        try:
            frame = history.frame(self.app.sessions, CHANNEL, client.chat_id, shown(client.chat_id))
        except (OSError, ValueError) as exc:  # an unreadable file: the chat still works
            log("gateway: could not read the history of {} ({})".format(client.chat_id, exc))
            frame = protocol.error(shown(client.chat_id), "The device could not read this chat's history.")
        await self._deliver(client, frame)

    def _new_chat_id(self, client):
        # the owner's: ws_<n>, skipping any n with a saved session or a client (a newcomer starts afresh); another
        # role's: ws_<random> (no one finds another's chat by counting)
        while True:
            if client.role == roles.OWNER:
                chat_id = "ws_{}".format(self._next_id)
                self._next_id += 1
            else:
                chat_id = _inside(client, "ws_" + binascii.hexlify(os.urandom(_ID_RANDOM_BYTES)).decode())
            if not self._clients_of(chat_id) and not self.app.sessions.exists(CHANNEL, chat_id):
                return chat_id

    # -- confirmation questions (safety/policy.py asks, a confirm frame answers) --
    async def confirm(self, question, seconds):
        """Send a confirm frame to the chat's clients; the first answer counts; then a confirmed frame."""
        from mimi.safety import confirm  # loaded with the first question (safety/policy_confirm.py)

        if not await self._to_chat(question.chat_id, protocol.confirm(shown(question.chat_id), question)):
            return confirm.DENIED  # nobody there to ask
        outcome = await question.wait(seconds)
        await self._to_chat(question.chat_id, protocol.confirmed(shown(question.chat_id), question.id, outcome))
        return outcome

    async def _on_answer(self, client, qid, approve):
        from mimi.safety import confirm

        if confirm.answer(self.app, CHANNEL, client.chat_id, qid, approve) != confirm.SETTLED:
            await self._deliver(client, protocol.notice(shown(client.chat_id), "That question is no longer open "
                                                        "(already answered or expired)."))

    # -- the websocket channel --
    async def on_delta(self, chat_id, text):
        await self._to_chat(chat_id, protocol.token(shown(chat_id), text))

    async def on_tool(self, chat_id, name):
        await self._to_chat(chat_id, protocol.tool(shown(chat_id), name))

    async def send(self, message):
        meta = message.meta
        if meta.get("kind") in ("report", "notice"):
            frame = protocol.notice(shown(message.chat_id), message.content)
        elif meta.get("kind") == "error":
            frame = protocol.error(shown(message.chat_id), message.content)
        else:
            frame = protocol.response(shown(message.chat_id), message.content)
        if not await self._to_chat(message.chat_id, frame):
            log(DROPPED.format(message.chat_id))

    def _clients_of(self, chat_id):
        return [client for client in self.clients if client.chat_id == chat_id]

    async def _to_chat(self, chat_id, frame):
        delivered = 0
        for client in self._clients_of(chat_id):
            if await self._deliver(client, frame):
                delivered += 1
        return delivered

    async def _deliver(self, client, frame):
        if client not in self.clients:  # hung up on, or closed by a change of the rules
            return False
        try:
            async with client.lock:
                await asyncio.wait_for(client.ws.send(frame), SEND_TIMEOUT_S)
            return True
        except Exception as exc:  # a gone or stuck client must never stall the agent
            log("gateway: could not reach {} ({}); hanging up".format(
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

    async def _keep_alive(self):
        # While clients are connected: ping the silent ones, hang up on those silent too long (a tab left open on
        # a phone that sleeps, a laptop closed): four of them would keep everyone else out.
        try:
            while self.clients:
                await asyncio.sleep(self.ping_after_s / 2)
                now = platform.ticks_ms()
                for client in list(self.clients):
                    silent = platform.ticks_diff(now, client.ws.heard_ms) / 1000
                    if silent >= self.silence_max_s:
                        log("gateway: {} silent for {} s (no pong); hung up".format(client.chat_id, int(silent)))
                        await self._hang_up(client)
                    elif silent >= self.ping_after_s:
                        try:
                            await asyncio.wait_for(client.ws.ping(), SEND_TIMEOUT_S)
                        except Exception:  # gone or stuck: its place is freed now
                            await self._hang_up(client)
        finally:
            self._watch = None


def _inside(client, chat_id):
    """The chat on the board that a client's chat id names: the owner's as named, another role's apart."""
    return chat_id if client.role == roles.OWNER else "{}.{}".format(client.role, chat_id)


def _meta(client):
    """A message's meta from a client that is not the owner: the role its turn acts with, its address (the
    per-minute limit counts it, whatever chat it names)."""
    if client.role == roles.OWNER:
        return None
    return {"role": client.role, "user_id": client.address}
