# The `discord` channel at work (made once a bot token is set): the gateway over a TLS WebSocket (HELLO, heartbeats,
# IDENTIFY, RESUME), direct messages and mentions to the agent, replies over REST streamed by edits.
import asyncio
import json
import os

from mimi import board, discord, jsontext, platform
from mimi.bus.message import DISCORD
from mimi.channels.chat_app import ChatApp, RateLimited, Refused
from mimi.health import memory_errors
from mimi.net import http
from mimi.net.backoff import Backoff
from mimi.net.http import HTTPError
from mimi.net.ws_client import Closed, WebSocket
from mimi.platform import const, log

_GUILD_MESSAGES, _DIRECT_MESSAGES, _MESSAGE_CONTENT = const(1 << 9), const(1 << 12), const(1 << 15)  # never GUILDS:
# its GUILD_CREATE payloads carry every channel and member
_FINAL_CLOSES = {4004: "the bot token was refused (discord_set <bot-token>)",
                 4010: "invalid shard", 4011: "sharding required", 4012: "invalid API version",
                 4013: "invalid intents",
                 4014: "an intent is not allowed: turn MESSAGE CONTENT on in the developer portal, or "
                       "config_set dc_config.content 0"}
_FRESH_CLOSES = (4007, 4009)  # invalid sequence, session timed out: IDENTIFY again
_BACKOFF_MAX_S = const(60)
_RESPONSE_MAX = const(32768)
_ROUTES_MAX = const(16)  # rate-limit buckets remembered (routes whose last answer said none remain)
_SMALL_BOARD = "Discord needs a board with PSRAM: its gateway holds a TLS session open all the time"


class Discord(ChatApp):
    name = DISCORD
    title = "Discord"
    ns = discord.NS
    allow_cmd = "discord_allow"
    outbox_file = discord.OUTBOX_FILE
    limit = const(2000)
    edit_every_ms = const(1500)

    def __init__(self, app):
        super().__init__(app)
        self.running = True
        self.me = None  # the bot user's id (READY)
        self.session = None  # [session_id, resume_gateway_url]: a dropped link RESUMEs it
        self.seq = None
        self.resumes = self.identifies = 0
        self._url = None  # the gateway URL (GET /gateway/bot), asked once
        self._acked = True
        self._ws = None
        self._wait_until = {}  # route -> ticks_ms before which a rate-limit bucket is empty
        app.config.subscribe(self._on_config)

    def _cfg(self, key):
        return self.app.config.get(discord.NS, key)

    def _on_config(self, ns, key):
        if ns == discord.NS and key in ("token", "api_base", "content"):
            self.session, self._url = None, None
            self._wake.set()
            if self._ws is not None:
                asyncio.create_task(self._ws.close(1000))

    # -- the service --
    async def run(self):
        self.outbox_task = asyncio.create_task(memory_errors.lasting("Discord outbox", self.run_outbox))
        await memory_errors.lasting("Discord gateway", self._gateway_loop)

    async def _gateway_loop(self):
        backoff = Backoff(1, _BACKOFF_MAX_S)
        while True:
            if not discord.configured(self.app.config):
                self.connected, self.error = False, "no bot token (discord_set <bot-token>)"
                await self.pause(3600)
                continue
            if board.small():
                self.connected, self.error = False, _SMALL_BOARD
                log("Discord: not started: " + _SMALL_BOARD)
                await self.pause(24 * 3600)
                continue
            final = None
            try:
                final = await self._session()
                backoff = Backoff(1, _BACKOFF_MAX_S)  # a session that got going starts the waits afresh
            except Closed as exc:
                final = _FINAL_CLOSES.get(exc.code)
                if exc.code in _FRESH_CLOSES:
                    self.session = None
                self.error = str(exc)
            except (HTTPError, OSError, EOFError, ValueError, RateLimited, Refused) as exc:
                self.error = str(exc) or "the connection ended"
                log("Discord: gateway: {}".format(self.error))
            finally:
                self.connected = False
                if self._ws is not None:
                    await self._ws.drop()
                    self._ws = None
            if final:
                self.error = final
                log("Discord: stopped: " + final)
                self.session = None
                await self.pause(24 * 3600)  # until a setting changes
                continue
            wait = backoff.next()
            if self.session is None:  # IDENTIFY again only after a pause (Discord counts session starts)
                wait = max(wait, 1 + os.urandom(1)[0] % 5)
            await self.pause(wait)

    async def _gateway_url(self):
        if self._url is None:
            answer = await self.rest("GET", "/gateway/bot")
            url = answer.get("url") if isinstance(answer, dict) else None
            if not isinstance(url, str) or not url.startswith(("wss://", "ws://")):
                raise HTTPError("Discord gave no gateway URL")
            self._url = url.rstrip("/")
        return self._url

    async def _session(self):
        """One connection: HELLO, IDENTIFY or RESUME, then events until it ends (Closed or OSError)."""
        url = self.session[1] if self.session else await self._gateway_url()
        self._ws = ws = await WebSocket.connect(url.rstrip("/") + "/?v=10&encoding=json")
        hello = _payload(await asyncio.wait_for(ws.receive(), 30))
        if hello.get("op") != 10:
            raise HTTPError("Discord's gateway did not say HELLO")
        interval = (hello.get("d") or {}).get("heartbeat_interval") or 41250
        if self.session:
            self.resumes += 1
            await self._send(ws, 6, {"token": self._cfg("token"), "session_id": self.session[0], "seq": self.seq})
        else:
            await self._identify(ws)
        self._acked = True
        beats = asyncio.create_task(self._heartbeat(ws, interval))
        try:
            while True:
                try:  # at least an ACK comes every interval: silence longer than that is a dead link
                    raw = await asyncio.wait_for(ws.receive(), interval * 3 / 2000 + 2)
                except asyncio.TimeoutError:
                    raise OSError("the gateway went silent")
                if not await self._on_payload(ws, _payload(raw)):
                    return None
        finally:
            beats.cancel()

    async def _identify(self, ws):
        self.identifies += 1
        self.seq = None
        intents = _GUILD_MESSAGES | _DIRECT_MESSAGES | (_MESSAGE_CONTENT if self._cfg("content") else 0)
        await self._send(ws, 2, {"token": self._cfg("token"), "intents": intents,
                                 "properties": {"os": "esp32", "browser": "mimiclaw", "device": "mimiclaw"}})

    async def _send(self, ws, op, data):
        await ws.send(json.dumps({"op": op, "d": data}))

    async def _heartbeat(self, ws, interval):
        """A beat after interval x jitter, then every interval; no ACK before the next beat: a dead link."""
        await asyncio.sleep(interval * (os.urandom(1)[0] / 256) / 1000)
        while not ws.closed:
            if not self._acked:
                log("Discord: no heartbeat ACK: the link is dead; resuming")
                await ws.drop()  # receive() ends with an OSError; the loop RESUMEs
                return
            self._acked = False
            try:
                await self._send(ws, 1, self.seq)
            except OSError:
                return
            await asyncio.sleep(interval / 1000)

    async def _on_payload(self, ws, message):
        """False when this connection should end (op 7, op 9)."""
        op = message.get("op")
        if message.get("s") is not None:
            self.seq = message["s"]
        if op == 11:
            self._acked = True
        elif op == 1:
            await self._send(ws, 1, self.seq)
        elif op == 7:
            log("Discord: the gateway asked to reconnect; resuming")
            await ws.close(4000)
            return False
        elif op == 9:
            if not message.get("d"):
                self.session = None
            log("Discord: invalid session ({})".format("resuming" if self.session else "identifying afresh"))
            await ws.close(4000 if self.session else 1000)
            return False
        elif op == 0:
            await self._dispatch(message.get("t"), message.get("d") or {})
        return True

    async def _dispatch(self, kind, data):
        if kind == "READY":
            self.me = (data.get("user") or {}).get("id")
            self.session = [data.get("session_id"), data.get("resume_gateway_url") or self._url]
            self.connected, self.error = True, None
            log("Discord: connected as {}".format((data.get("user") or {}).get("username")))
        elif kind == "RESUMED":
            self.connected, self.error = True, None
            log("Discord: session resumed")
        elif kind == "MESSAGE_CREATE":
            try:
                await self._message(data)
            except MemoryError:
                raise
            except Exception as exc:  # one bad message never ends the session
                log("Discord: could not handle a message: {}".format(exc))

    async def _message(self, data):
        author = data.get("author") or {}
        user, chat_id = author.get("id"), data.get("channel_id")
        if author.get("bot") or user is None or user == self.me or chat_id is None:
            return
        text = data.get("content") if isinstance(data.get("content"), str) else ""
        if data.get("guild_id") is not None:  # a server's channel: answered only when the bot is mentioned
            mentioned = [m for m in data.get("mentions") or () if isinstance(m, dict) and m.get("id") == self.me]
            if not mentioned:
                return
            for form in ("<@{}>", "<@!{}>"):
                text = text.replace(form.format(self.me), " ")
            text = " ".join(text.split())
        elif self.role_of(user) is not None:
            self.remember_direct(chat_id, user)
        media = None
        files = [a for a in data.get("attachments") or () if isinstance(a, dict) and a.get("url")]
        if files and self.role_of(user) is not None:
            from mimi.agent.attachments import Refused as Unreadable

            try:
                media = await self._media(data.get("id"), files[0])
            except Unreadable as exc:
                await self.notice(chat_id, str(exc))
                return
        await self.incoming(user, chat_id, text, None, media, author.get("username"))

    async def _media(self, message_id, attachment):
        from mimi.agent.attachments import safe_name

        size = attachment.get("size")
        return await self.receive("dc_" + safe_name(str(message_id)), attachment["url"], None,
                                  attachment.get("filename") or "file",
                                  str(attachment.get("content_type") or "").split(";")[0].lower(),
                                  size if isinstance(size, int) else None)

    # -- REST (channels/chat_app.py calls post, edit, typing) --
    async def rest(self, method, path, body=None, route=None):
        """One REST call: its JSON answer. RateLimited (429, or a bucket known empty), Refused (4xx), HTTPError."""
        route = route or path
        until = self._wait_until.get(route)
        if until is not None and platform.ticks_diff(until, platform.ticks_ms()) > 0:
            await asyncio.sleep(platform.ticks_diff(until, platform.ticks_ms()) / 1000)
        headers = {"authorization": "Bot " + self._cfg("token"), "content-type": "application/json",
                   "user-agent": "DiscordBot (https://github.com/mimiclaw-py, 1)"}
        data = None if body is None else json.dumps(body).encode()
        response = await http.request(method, self._cfg("api_base").rstrip("/") + path, headers, data, 20)
        try:
            raw = await response.read(_RESPONSE_MAX)
        finally:
            await response.aclose()
        self._bucket(route, response.headers)
        try:
            answer = jsontext.loads(raw) if raw else {}
        except ValueError:
            answer = {}
        if response.status == 429:
            retry = answer.get("retry_after") if isinstance(answer, dict) else None
            retry = float(retry if isinstance(retry, (int, float)) else 1)
            self._wait_until[route] = platform.ticks_add(platform.ticks_ms(), int(retry * 1000))
            raise RateLimited(retry)
        if response.status >= 500:
            raise HTTPError("Discord answered {}".format(response.status))
        if response.status >= 400:
            message = answer.get("message") if isinstance(answer, dict) else None
            raise Refused("Discord {}: {}".format(response.status, str(message or "refused")[:200]))
        return answer

    def _bucket(self, route, headers):
        """X-RateLimit-Remaining 0: this route waits Reset-After seconds before its next call."""
        if headers.get("x-ratelimit-remaining") == "0":
            try:
                after = float(headers.get("x-ratelimit-reset-after") or 1)
            except ValueError:
                after = 1
            if len(self._wait_until) >= _ROUTES_MAX:  # bounded: an old route's wait is long over
                self._wait_until.clear()
            self._wait_until[route] = platform.ticks_add(platform.ticks_ms(), int(after * 1000))
        else:
            self._wait_until.pop(route, None)

    async def post(self, chat_id, html, plain, notice, key):
        body = {"content": plain, "allowed_mentions": {"parse": []}}
        if key:
            body["nonce"], body["enforce_nonce"] = key[:25], True  # a resend within minutes is not doubled
        answer = await self.rest("POST", "/channels/{}/messages".format(chat_id), body,
                                 "messages:" + str(chat_id))
        return answer.get("id")

    async def edit(self, chat_id, message_id, html, plain):
        await self.rest("PATCH", "/channels/{}/messages/{}".format(chat_id, message_id),
                        {"content": plain, "allowed_mentions": {"parse": []}}, "messages:" + str(chat_id))

    async def typing(self, chat_id):
        try:
            await self.rest("POST", "/channels/{}/typing".format(chat_id), None, "typing:" + str(chat_id))
        except (RateLimited, Refused, HTTPError, OSError):
            pass


def _payload(text):
    """A gateway message as a dict (ValueError otherwise)."""
    message = jsontext.loads(text) if isinstance(text, str) else None
    if not isinstance(message, dict):
        raise ValueError("the gateway sent something that is not a JSON object")
    return message
