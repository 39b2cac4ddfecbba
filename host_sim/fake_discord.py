# A fake Discord (gateway v10 over WebSocket, REST API v10, attachments) with scripted faults, for tests.
import argparse
import asyncio
import copy
import json
import re
import secrets
import threading
import time
import zlib

from aiohttp import WSMsgType, web

from host_sim.background_server import BackgroundServer
from host_sim.discord_wire import (
    ALL_INTENTS, API, APP_GATEWAY_MESSAGE_CONTENT_LIMITED, CLIENT_OPS, CLIENT_PAYLOAD_MAX,
    CLIENT_SENDS_PER_MINUTE, CLOSE_REASONS, CONTENT_MAX, DIRECT_MESSAGES, DISPATCH, EMPTY_MESSAGE, GUILD_MEMBERS,
    GUILD_MESSAGES, GUILD_PRESENCES, GUILDS, HEARTBEAT, HEARTBEAT_ACK, HELLO, IDENTIFY, INVALID_SESSION,
    MESSAGE_BUCKET, MESSAGE_CONTENT, NOT_A_STRING, NOT_ALLOWED, NOT_AUTHOR, NOT_FOUND, OTHER_BUCKET, RECONNECT,
    RESUME, TOO_LONG, TRACE, UNAUTHORIZED, UNKNOWN_CHANNEL, UNKNOWN_MESSAGE, UNKNOWN_REFERENCE, UNLIMITED_BUCKET,
    Buckets, Snowflakes, ZlibStream, attachment_object, current_user, dm_channel_object, dumps,
    guild_channel_object, guild_object, json_response, member_object, message_object, now_iso, payload,
    rate_limited, read_body, user_object)

DEFAULT_TOKEN = "MTEwMDAwMDAwMDAwMDAwMDAwMQ.GfAkEe.board-bot-token-for-tests-only"
DEFAULT_BOT_ID = "1100000000000000001"
_ID = r"(\d+)"
_ROUTES = [  # (method, path under /api/v10, handler, needs the bot's Authorization)
    ("GET", "/gateway", "_rest_gateway", False),
    ("GET", "/gateway/bot", "_rest_gateway_bot", True),
    ("GET", "/users/@me", "_rest_me", True),
    ("GET", "/oauth2/applications/@me", "_rest_application", True),
    ("GET", "/applications/@me", "_rest_application", True),
    ("POST", "/users/@me/channels", "_rest_open_dm", True),
    ("GET", "/channels/{}".format(_ID), "_rest_channel", True),
    ("POST", "/channels/{}/messages".format(_ID), "_rest_create", True),
    ("GET", "/channels/{}/messages/{}".format(_ID, _ID), "_rest_message", True),
    ("PATCH", "/channels/{}/messages/{}".format(_ID, _ID), "_rest_edit", True),
    ("POST", "/channels/{}/typing".format(_ID), "_rest_typing", True),
]
_COMPILED = [(method, re.compile("^" + path + "$"), path.replace(_ID, "{id}"), name, auth)
             for method, path, name, auth in _ROUTES]
_SENDS = ("POST /channels/{id}/messages", "PATCH /channels/{id}/messages/{id}")
_MENTION = re.compile(r"<@!?(\d+)>")


class _Session:
    def __init__(self, intents):
        self.id = secrets.token_hex(16)
        self.intents, self.seq, self.events = intents, 0, []
        self.resumable, self.link = True, None


class _Link:
    """One gateway connection: an outbox drained in order by a writer task."""

    def __init__(self, ws, request, stream):
        self.ws, self.request, self.stream, self.path = ws, request, stream, request.path
        self.outbox = asyncio.Queue()
        self.session = self.last_session = None
        self.authenticated = self.zombie = self.closing = self.dropped = False
        self.last_beat = time.monotonic()
        self.sends = []

    def send(self, message, alone=False):
        self.outbox.put_nowait(("json", message, alone))

    def close(self, code, reason=None):
        if not self.closing:
            self.closing = True
            self.outbox.put_nowait(("close", code, CLOSE_REASONS.get(code, "") if reason is None else reason))


class FakeDiscord(BackgroundServer):
    """Discord on a local port: REST under `<url>/api/v10`, the gateway at `gateway_url`; users' messages by
    user_message(), what the bot did in calls/sent/edits/sessions/identifies/resumes/heartbeats, faults scripted."""

    name = "fake-discord"

    def __init__(self, token=DEFAULT_TOKEN, ssl_context=None, heartbeat_interval_ms=41250, message_content=False,
                 host="127.0.0.1", port=0, bot_id=DEFAULT_BOT_ID, bot_name="board-bot", rate_limits=True,
                 heartbeat_timeout=True):
        super().__init__(ssl_context, host, port)
        self.token, self.message_content = token, message_content
        self.heartbeat_interval_ms, self.heartbeat_timeout = heartbeat_interval_ms, heartbeat_timeout
        self.bot = user_object(bot_id, bot_name, bot=True, discriminator="4242")
        self._lock = threading.RLock()
        self._ids = Snowflakes()
        self._buckets = Buckets(lambda route: (MESSAGE_BUCKET if route in _SENDS else OTHER_BUCKET)
                                if rate_limits else UNLIMITED_BUCKET)
        self._users, self._dms, self._channels, self._guilds, self._messages = {}, {}, {}, {}, {}
        self._files, self._sessions, self._links = {}, {}, set()
        self._calls, self._edits, self._downloads, self._rate_limited = [], [], [], []
        self._identifies, self._resumes, self._heartbeats, self._closes = [], [], [], []
        self._pending_throttles, self._throttles, self._throttle = [], [], None
        self._zombie_next, self._starts_left = False, 1000

    # ---- where it is ----

    @property
    def bot_id(self):
        return self.bot["id"]

    @property
    def api_base(self):
        """The REST base the board uses: <url>/api/v10."""
        return self.url + API

    @property
    def gateway_url(self):
        """What GET /gateway/bot answers: ws(s)://host:port (the same host and port as url)."""
        return self.url.replace("https://", "wss://").replace("http://", "ws://")

    # ---- the users' side (thread-safe) ----

    def user_message(self, user_id, text, channel_id=None, guild_id=None, mentions_bot=False, attachments=None,
                     username="user", reply_to=None):
        """A user's message, dispatched as MESSAGE_CREATE to every live session whose intents allow it (queued
        for a RESUME while no connection carries the session; lost while no session exists, as the bot is then
        offline). A DM (no guild_id) is in the user's DM channel, the one POST /users/@me/channels gives;
        attachments: [{"filename", "data", "content_type"?, "width"?, "height"?}] or (filename, data[, type]).
        Returns the message id."""
        return self._in_loop(self._user_message, str(user_id), text, channel_id, guild_id, mentions_bot,
                             attachments or [], username, reply_to)

    def dm_channel(self, user_id):
        """The id of the DM channel between the bot and the user (made on first use)."""
        return self._in_loop(lambda: self._dm(str(user_id))["object"]["id"])

    def add_guild(self, guild_id=None, name="fake guild", channel_id=None):
        """A guild the bot is in, with one text channel; returns (guild_id, channel_id). Sessions with GUILDS get
        GUILD_CREATE (as when a bot joins)."""
        def add():
            channel = self._guild_channel(str(guild_id or self._ids.next()), channel_id, name)
            return channel["object"]["guild_id"], channel["object"]["id"]
        return self._in_loop(add)

    # ---- faults (thread-safe) ----

    def send_reconnect(self):
        """op 7 to every live connection (its session stays resumable); returns how many were told."""
        def act():
            links = self._carrying()
            for link in links:
                link.send(payload(RECONNECT))
                self._detach(link)
            return len(links)
        return self._in_loop(act)

    def invalidate_session(self, resumable=False):
        """op 9 (d=resumable) to every live connection; unless resumable its session is gone for RESUME (with no
        connection, every session is). Returns how many connections were told."""
        def act():
            links = self._carrying()
            sessions = [link.session for link in links] or list(self._sessions.values())
            for link in links:
                link.send(payload(INVALID_SESSION, resumable))
                self._detach(link)
                link.authenticated = False
            for session in sessions:
                session.resumable = session.resumable and resumable
            return len(links)
        return self._in_loop(act)

    def stop_acks(self):
        """The live connection (or, with none, the next to identify/resume) turns zombie: heartbeats get no ACK
        and dispatches do not reach the client (they stay in the session for a RESUME)."""
        def act():
            links = self._carrying()
            for link in links:
                link.zombie = True
            self._zombie_next = not links
        self._in_loop(act)

    def resume_acks(self):
        """Connections ACK and deliver again (what was withheld stays withheld)."""
        def act():
            self._zombie_next = False
            for link in self._links:
                link.zombie = False
        self._in_loop(act)

    def drop_connection(self):
        """Cut every gateway connection without a close frame (sessions stay resumable); returns how many."""
        def act():
            links = list(self._links)
            for link in links:
                link.dropped = link.closing = True
                if link.request.transport is not None:
                    link.request.transport.abort()
            return len(links)
        return self._in_loop(act)

    def close_connection(self, code=4000, reason=None):
        """Close every gateway connection with `code`; 4007 and 4009 end the session, others keep it."""
        def act():
            links = list(self._links)
            for link in links:
                if code in (4007, 4009) and link.session is not None:
                    link.session.resumable = False
                link.close(code, reason)
            return len(links)
        return self._in_loop(act)

    def request_heartbeat(self):
        """op 1 from the gateway: the client must heartbeat at once; returns how many connections were asked."""
        return len(self._in_loop(lambda: [link.send(payload(HEARTBEAT)) for link in self._carrying()]))

    def rate_limit_next_send(self, retry_after=1.0, global_=False):
        """The next message POST/PATCH answers 429; until retry_after passed every further one (every request
        when global_) answers 429 too, recorded as too_early. See `throttles`."""
        with self._lock:
            self._pending_throttles.append({"retry_after": float(retry_after), "global": bool(global_),
                                            "limited_at": None, "until": None, "too_early": [],
                                            "accepted_at": None})

    # ---- what the bot did (thread-safe copies) ----

    def _copy(self, value):
        with self._lock:
            return copy.deepcopy(value)

    @property
    def calls(self):
        """Every REST request: {"method", "path", "json", "files", "time", "status", "response"}, oldest first."""
        return self._copy(self._calls)

    def sent(self, channel_id):
        """The bot's messages in the channel as they stand now (after edits), oldest first."""
        return [m["message"] for m in self._copy(self._in_channel(channel_id)) if m["from_bot"]]

    def messages(self, channel_id):
        """Every message in the channel (users' and the bot's), oldest first."""
        return [m["message"] for m in self._copy(self._in_channel(channel_id))]

    def edits(self, channel_id):
        """The bot's edits in the channel: {"message_id", "content", "previous", "time"}, oldest first."""
        with self._lock:
            return [dict(e) for e in self._edits if e["channel_id"] == str(channel_id)]

    def typing(self, channel_id):
        """Times of POST /channels/{id}/typing."""
        with self._lock:
            return list(self._channels.get(str(channel_id), {}).get("typing", []))

    @property
    def downloads(self):
        """Attachment downloads: {"path", "status", "time"}."""
        return self._copy(self._downloads)

    @property
    def throttles(self):
        """One per rate_limit_next_send: {"retry_after", "global", "limited_at" (the 429), "until",
        "too_early" [times of sends refused again], "accepted_at" (the next accepted send)}."""
        return self._copy(self._throttles)

    @property
    def rate_limited(self):
        """Every 429: {"time", "method", "path", "retry_after", "global", "scripted", "too_early"}."""
        return self._copy(self._rate_limited)

    @property
    def sessions(self):
        """{"session_id", "intents", "seq", "resumable", "connected", "events" [t of each dispatch]}."""
        with self._lock:
            return [{"session_id": s.id, "intents": s.intents, "seq": s.seq, "resumable": s.resumable,
                     "connected": s.link is not None, "events": [e["t"] for e in s.events]}
                    for s in self._sessions.values()]

    @property
    def identifies(self):
        """{"time", "path", "compress", "token_ok", "intents", "properties", "session_id", "outcome"}."""
        return self._copy(self._identifies)

    @property
    def resumes(self):
        """{"time", "path", "session_id", "seq", "outcome" ("resumed"/"invalid"/close code), "replayed"}."""
        return self._copy(self._resumes)

    @property
    def heartbeats(self):
        """{"time", "d", "session_id", "acked"}."""
        return self._copy(self._heartbeats)

    @property
    def closes(self):
        """Ends of gateway connections: {"time", "by" ("client"/"fake"/"drop"), "code", "reason", "session_id"}."""
        return self._copy(self._closes)

    @property
    def connected(self):
        """A client is connected and identified or resumed."""
        with self._lock:
            return bool(self._carrying())

    # ---- the world: users, channels, guilds, messages (the lock held) ----

    def _in_loop(self, fn, *args):
        """Run fn on the server's loop with the lock held (outboxes are the loop's); wait for its result."""
        loop = self._loop
        if loop is None or not loop.is_running() or threading.current_thread() is self._thread:
            with self._lock:
                return fn(*args)

        async def call():
            with self._lock:
                return fn(*args)
        return asyncio.run_coroutine_threadsafe(call(), loop).result(10)

    def _user(self, user_id, username="user"):
        user = self._users.get(user_id)
        if user is None or user["username"] != username:
            user = self._users[user_id] = user_object(user_id, username, global_name=username.title())
        return user

    def _dm(self, user_id, channel_id=None, username="user"):
        recipient = self._users.get(user_id) or self._user(user_id, username)
        if user_id not in self._dms:
            channel_id = str(channel_id or self._ids.next())
            self._dms[user_id] = channel_id
            self._channels[channel_id] = {"object": dm_channel_object(channel_id, recipient), "messages": [],
                                          "typing": []}
        return self._channels[self._dms[user_id]]

    def _guild_channel(self, guild_id, channel_id=None, name="fake guild"):
        guild = self._guilds.get(guild_id)
        if guild is None:
            guild = self._guilds[guild_id] = {"id": guild_id, "name": name, "channels": [], "joined_at": now_iso()}
        if channel_id is None and guild["channels"]:
            return self._channels[guild["channels"][0]]
        channel_id = str(channel_id or self._ids.next())
        if channel_id not in self._channels:
            self._channels[channel_id] = {"object": guild_channel_object(
                channel_id, guild_id, "general" if not guild["channels"] else "channel-" + channel_id[-4:],
                len(guild["channels"])), "messages": [], "typing": []}
            guild["channels"].append(channel_id)
            self._dispatch("GUILD_CREATE", lambda intents: self._guild_create(guild) if intents & GUILDS else None)
        return self._channels[channel_id]

    def _guild_create(self, guild):
        channels = [self._channels[c]["object"] for c in guild["channels"]]
        return guild_object(guild, channels, next(iter(self._users), self.bot_id), guild["joined_at"])

    def _in_channel(self, channel_id):
        return [self._messages[m] for m in self._channels.get(str(channel_id), {}).get("messages", [])]

    def _user_message(self, user_id, text, channel_id, guild_id, mentions_bot, attachments, username, reply_to):
        author = self._user(user_id, username)
        if guild_id is None:
            channel = self._dm(user_id, channel_id, username)
        else:
            channel = self._guild_channel(str(guild_id), channel_id)
        channel_id = channel["object"]["id"]
        tag = "<@{}>".format(self.bot_id)
        if mentions_bot and tag not in text:
            text = "{} {}".format(tag, text)
        files = []
        for item in attachments:
            item = item if isinstance(item, dict) else dict(zip(("filename", "data", "content_type"), item))
            files.append(self._store_file(channel_id, item["filename"], item["data"], item.get("content_type"),
                                          item.get("width"), item.get("height")))
        reference = referenced = None
        if reply_to is not None and str(reply_to) in self._messages:
            reference = {"type": 0, "channel_id": channel_id, "message_id": str(reply_to)}
            referenced = copy.deepcopy(self._messages[str(reply_to)]["message"])
        message = message_object(self._ids.next(), channel_id, author, text, mentions=self._mentions(text),
                                 attachments=files, reference=reference, referenced=referenced)
        return self._add_message(channel, message, from_bot=False)

    def _mentions(self, text):
        known = dict(self._users, **{self.bot_id: self.bot})
        return [copy.deepcopy(known[i]) for i in dict.fromkeys(_MENTION.findall(text)) if i in known]

    def _store_file(self, channel_id, filename, data, content_type=None, width=None, height=None):
        attachment, signed = attachment_object(self.url, channel_id, self._ids.next(), filename, data,
                                               content_type, width, height)
        key = "/attachments/{}/{}/{}".format(channel_id, attachment["id"], filename)
        self._files[key] = {"data": data, "content_type": attachment["content_type"], "signed": signed}
        return attachment

    def _add_message(self, channel, message, from_bot):
        entry = {"message": message, "from_bot": from_bot, "channel_id": message["channel_id"],
                 "mentions_bot": any(u["id"] == self.bot_id for u in message["mentions"])}
        self._messages[message["id"]] = entry
        channel["messages"].append(message["id"])
        channel["object"]["last_message_id"] = message["id"]
        self._dispatch_message("MESSAGE_CREATE", entry)
        return message["id"]

    def _dispatch_message(self, event, entry):
        """MESSAGE_CREATE/UPDATE as the gateway shapes it, to the sessions whose intents allow it; without
        MESSAGE_CONTENT a guild message neither from nor mentioning the bot arrives without its content."""
        guild_id = self._channels[entry["channel_id"]]["object"].get("guild_id")
        message = copy.deepcopy(entry["message"])
        if guild_id:
            message["guild_id"] = guild_id
            message["member"] = member_object(self._guilds[guild_id]["joined_at"])
            for user in message["mentions"]:
                user["member"] = member_object(self._guilds[guild_id]["joined_at"])

        def shaped(intents):
            if not intents & (GUILD_MESSAGES if guild_id else DIRECT_MESSAGES):
                return None
            if guild_id and not (entry["from_bot"] or entry["mentions_bot"] or intents & MESSAGE_CONTENT):
                return dict(message, content="", attachments=[], embeds=[], components=[])
            return message
        self._dispatch(event, shaped)

    # ---- the gateway's sessions (loop thread, the lock held) ----

    def _dispatch(self, event, shape, only=None, alone=False):
        """op 0 to each live session (or `only`) as shape(intents) gives it (None: not for that session); kept
        in the session for a RESUME."""
        for session in [only] if only else list(self._sessions.values()):
            d = shape(session.intents) if session.resumable else None
            if d is None:
                continue
            session.seq += 1
            message = payload(DISPATCH, copy.deepcopy(d), session.seq, event)
            session.events.append(message)
            if session.link is not None:
                session.link.send(message, alone)

    def _carrying(self):
        return [link for link in self._links if link.session is not None and not link.closing]

    def _attach(self, link, session):
        if session.link is not None and session.link is not link:  # resumed elsewhere: the old one is cut
            old = session.link
            self._detach(old)
            old.closing = old.dropped = True
            if old.request.transport is not None:
                old.request.transport.abort()
        link.session = link.last_session = session
        session.link = link
        link.authenticated = True
        if self._zombie_next:
            link.zombie, self._zombie_next = True, False

    def _detach(self, link):
        if link.session is not None and link.session.link is link:
            link.session.link = None
        link.session = None

    def _received(self, link, data):
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if len(raw) > CLIENT_PAYLOAD_MAX:
            return link.close(4002)
        now = time.monotonic()
        link.sends = [t for t in link.sends if now - t < 60] + [now]
        if len(link.sends) > CLIENT_SENDS_PER_MINUTE:
            return link.close(4008)
        try:
            message = json.loads(raw)
        except ValueError:
            return link.close(4002)
        if not isinstance(message, dict) or type(message.get("op")) is not int:
            return link.close(4002)
        op, d = message["op"], message.get("d")
        if op not in CLIENT_OPS:
            return link.close(4001)
        if op == HEARTBEAT:
            return self._heartbeat(link, d)
        if op in (IDENTIFY, RESUME) and link.authenticated:
            return link.close(4005)
        if op == IDENTIFY:
            return self._identify(link, d)
        if op == RESUME:
            return self._resume(link, d)
        if not link.authenticated:
            return link.close(4003)

    def _heartbeat(self, link, d):
        if d is not None and type(d) is not int:
            return link.close(4002)
        link.last_beat = time.monotonic()
        self._heartbeats.append({"time": time.time(), "d": d, "acked": not link.zombie,
                                 "session_id": link.session.id if link.session else None})
        link.send(payload(HEARTBEAT_ACK))  # a zombie's writer withholds it

    def _identify(self, link, d):
        record = {"time": time.time(), "path": link.path, "compress": link.request.query.get("compress"),
                  "token_ok": isinstance(d, dict) and d.get("token") == self.token, "session_id": None,
                  "intents": d.get("intents") if isinstance(d, dict) else None,
                  "properties": d.get("properties") if isinstance(d, dict) else None}
        self._identifies.append(record)
        code = self._identify_refusal(d)
        if code:
            record["outcome"] = code
            return link.close(code)
        session = _Session(d["intents"])
        self._sessions[session.id] = session
        self._starts_left -= 1
        record.update(session_id=session.id, outcome="ready")
        self._attach(link, session)
        bot = current_user(self.bot)
        ready = {"v": 10, "user": bot, "user_settings": {}, "session_type": "normal", "session_id": session.id,
                 "resume_gateway_url": self.gateway_url + "/resume", "relationships": [], "private_channels": [],
                 "presences": [], "guild_join_requests": [], "geo_ordered_rtc_regions": ["fake"], "auth": {},
                 "guilds": [{"id": g, "unavailable": True} for g in self._guilds],
                 "application": {"id": self.bot_id, "flags": self._app_flags()}, "_trace": TRACE}
        if d.get("shard") is not None:
            ready["shard"] = [0, 1]
        # identify's compress asks for payload compression: READY as one zlib binary frame (not with compress=)
        self._dispatch("READY", lambda _: ready, only=session, alone=bool(d.get("compress")) and not link.stream)
        if session.intents & GUILDS:
            for guild in self._guilds.values():
                self._dispatch("GUILD_CREATE", lambda _: self._guild_create(guild), only=session)

    def _identify_refusal(self, d):
        """The close code that refuses an IDENTIFY, or None."""
        if not isinstance(d, dict):
            return 4002
        if d.get("token") != self.token:
            return 4004
        intents = d.get("intents")
        if type(intents) is not int or intents < 0 or intents & ~ALL_INTENTS:
            return 4013
        properties = d.get("properties")
        if not isinstance(properties, dict) or any(not isinstance(properties.get(k), str)
                                                   for k in ("os", "browser", "device")):
            return 4002
        if d.get("shard") is not None and list(d["shard"]) != [0, 1]:
            return 4010
        if intents & (GUILD_MEMBERS | GUILD_PRESENCES) or (intents & MESSAGE_CONTENT and not self.message_content):
            return 4014
        return None

    def _resume(self, link, d):
        d = d if isinstance(d, dict) else {}
        record = {"time": time.time(), "path": link.path, "session_id": d.get("session_id"), "seq": d.get("seq"),
                  "replayed": 0}
        self._resumes.append(record)
        if d.get("token") != self.token:
            record["outcome"] = 4004
            return link.close(4004)
        session, seq = self._sessions.get(d.get("session_id")), d.get("seq")
        if session is None or not session.resumable:
            record["outcome"] = "invalid"
            return link.send(payload(INVALID_SESSION, False))
        if seq is not None and (type(seq) is not int or seq > session.seq):
            record["outcome"] = 4007
            return link.close(4007)
        self._attach(link, session)
        missed = [e for e in session.events if e["s"] > (seq or 0)]
        for event in missed:
            link.send(event)
        record.update(outcome="resumed", replayed=len(missed))
        self._dispatch("RESUMED", lambda _: {"_trace": TRACE}, only=session)

    # ---- serving ----

    async def _closing(self):
        with self._lock:
            for link in list(self._links):  # no close handshake to wait for: stop() stays quick
                link.closing = link.dropped = True
                if link.request.transport is not None:
                    link.request.transport.abort()

    async def _handle(self, request):
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await self._gateway(request)
        if request.path.startswith("/attachments/"):
            return self._serve_file(request)
        return await self._rest(request)

    async def _gateway(self, request):
        ws = web.WebSocketResponse(compress=False, max_msg_size=1 << 20, timeout=2.0)
        await ws.prepare(request)
        query = request.query
        link = _Link(ws, request, ZlibStream() if query.get("compress") == "zlib-stream" else None)
        writer = asyncio.ensure_future(self._write(link))
        with self._lock:
            self._links.add(link)
            if query.get("v") != "10":
                link.close(4012)
            elif query.get("encoding", "json") != "json":
                link.close(4002, "The fake gateway speaks JSON only.")
            elif query.get("compress") not in (None, "zlib-stream"):
                link.close(4000, "The fake gateway compresses with zlib-stream only.")
            else:
                link.send(payload(HELLO, {"heartbeat_interval": self.heartbeat_interval_ms, "_trace": TRACE}))
        watchdog = asyncio.ensure_future(self._watch(link)) if self.heartbeat_timeout else None
        client_code = None
        try:
            while True:
                message = await ws.receive()
                if message.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    with self._lock:
                        if not link.closing:
                            self._received(link, message.data)
                elif message.type == WSMsgType.CLOSE:
                    client_code = message.data
                    break
                else:
                    break
        finally:
            self._gone(link, client_code)
            if watchdog is not None:
                watchdog.cancel()
            if link.closing and not link.dropped and not writer.done():
                await asyncio.wait({writer}, timeout=3)
            writer.cancel()
        return ws

    def _gone(self, link, client_code):
        with self._lock:
            self._links.discard(link)
            session, self_closed = link.last_session, link.closing and not link.dropped
            self._detach(link)
            if client_code in (1000, 1001) and session is not None and session.link is None:
                session.resumable = False  # a client closing with 1000/1001 ends its session, as on Discord
            if link.dropped or not self_closed:
                self._closes.append({"time": time.time(), "by": "drop" if link.dropped else "client",
                                     "code": client_code, "reason": None,
                                     "session_id": session.id if session else None})

    async def _write(self, link):
        ws = link.ws
        try:
            while True:
                kind, *item = await link.outbox.get()
                if kind == "close":
                    with self._lock:
                        self._closes.append({"time": time.time(), "by": "fake", "code": item[0], "reason": item[1],
                                             "session_id": link.last_session.id if link.last_session else None})
                    await ws.close(code=item[0], message=item[1].encode("utf-8"))
                    return
                message, alone = item
                if link.zombie and message["op"] in (DISPATCH, HEARTBEAT_ACK):
                    continue
                text = dumps(message)
                if link.stream is not None:
                    await ws.send_bytes(link.stream.frame(text))
                elif alone:
                    await ws.send_bytes(zlib.compress(text.encode("utf-8")))
                else:
                    await ws.send_str(text)
        except (ConnectionError, RuntimeError):
            pass

    async def _watch(self, link):
        """Close a connection that stopped heartbeating (no beat for two intervals) with 4009; its session ends."""
        interval = self.heartbeat_interval_ms / 1000.0
        while not link.closing:
            await asyncio.sleep(interval / 4)
            with self._lock:
                if not link.closing and time.monotonic() - link.last_beat > 2 * interval:
                    if link.session is not None:
                        link.session.resumable = False
                    link.close(4009)

    def _serve_file(self, request):
        with self._lock:
            entry = self._files.get(request.path)
            ok = entry is not None and all(request.query.get(k) == v for k, v in entry["signed"].items())
            self._downloads.append({"path": request.path, "status": 200 if ok else 404, "time": time.time()})
        if not ok:
            return web.Response(status=404, text="This content is no longer available.")
        return web.Response(body=entry["data"], content_type=entry["content_type"])

    async def _rest(self, request):
        record = {"method": request.method, "path": request.path, "json": None, "files": [], "time": time.time(),
                  "status": None, "response": None}
        with self._lock:
            self._calls.append(record)
        body, files, bad_body = await read_body(request)
        with self._lock:
            record["json"], record["files"] = copy.deepcopy(body), [f["filename"] for f in files]
            return self._answer(request, record, body, files, bad_body)

    def _answer(self, request, record, body, files, bad_body):
        route, known = self._route(request.method, request.path)
        if route is None:
            return self._finish(record, *(NOT_ALLOWED if known else NOT_FOUND), Buckets.headers(
                request.method + " " + request.path, 50, 49, 1.0))
        template, name, auth, args = route
        if auth and request.headers.get("Authorization") != "Bot " + self.token:
            return self._finish(record, *UNAUTHORIZED, Buckets.headers(template, 50, 49, 1.0))
        refused = self._throttled(record, template, args[0] if args else "")
        if refused is not None:
            return refused
        allowed, headers, retry_after, too_early = self._buckets.take(template, args[0] if args else "",
                                                                      time.monotonic())
        if not allowed:
            self._rate_limited.append({"time": time.time(), "method": record["method"], "path": record["path"],
                                       "retry_after": retry_after, "global": False, "scripted": False,
                                       "too_early": too_early})
            return self._finish(record, 429, None, rate_limited(retry_after, False, headers))
        status, answer = bad_body if bad_body else getattr(self, name)(*args, body=body, files=files)
        if status < 300 and template in _SENDS and self._throttle is not None:
            self._throttle["accepted_at"], self._throttle = time.time(), None
        return self._finish(record, status, answer, headers)

    def _route(self, method, path):
        """((template, handler, auth, ids), path known) for a request."""
        if not path.startswith(API + "/"):
            return None, False
        known = False
        for verb, pattern, template, name, auth in _COMPILED:
            match = pattern.match(path[len(API):])
            if match:
                known = True
                if verb == method:
                    return (verb + " " + template, name, auth, match.groups()), True
        return None, known

    def _throttled(self, record, template, major):
        """The 429 of a scripted rate limit, or None."""
        now, send = time.time(), template in _SENDS
        active = self._throttle
        if active is not None and now < active["until"] and (send or active["global"]):
            active["too_early"].append(now)
            retry_after, global_, too_early = active["until"] - now, active["global"], True
        elif send and self._pending_throttles:
            active = self._throttle = self._pending_throttles.pop(0)
            active["limited_at"], active["until"] = now, now + active["retry_after"]
            self._throttles.append(active)
            retry_after, global_, too_early = active["retry_after"], active["global"], False
        else:
            return None
        self._rate_limited.append({"time": now, "method": record["method"], "path": record["path"],
                                   "retry_after": retry_after, "global": global_, "scripted": True,
                                   "too_early": too_early})
        headers = {} if global_ else Buckets.headers(template, MESSAGE_BUCKET[0], 0, retry_after)
        return self._finish(record, 429, None, rate_limited(retry_after, global_, headers))

    def _finish(self, record, status, answer, headers):
        response = headers if isinstance(headers, web.Response) else json_response(status, answer, headers)
        record["status"] = status
        record["response"] = copy.deepcopy(answer) if answer is not None else json.loads(response.body or b"null")
        return response

    # ---- REST handlers (the lock held): (status, body) ----

    def _rest_gateway(self, body, files):
        return 200, {"url": self.gateway_url}

    def _rest_gateway_bot(self, body, files):
        return 200, {"url": self.gateway_url, "shards": 1, "session_start_limit": {
            "total": 1000, "remaining": self._starts_left, "reset_after": 86400000, "max_concurrency": 1}}

    def _rest_me(self, body, files):
        return 200, current_user(self.bot)

    def _rest_application(self, body, files):
        """The bot's application (discord.py's login reads it): its id is the bot's, owned by a user."""
        owner = user_object(str(int(self.bot_id) - 1), "owner", global_name="Owner")
        return 200, {"id": self.bot_id, "name": self.bot["username"], "icon": None, "description": "",
                     "summary": "", "type": None, "bot_public": False, "bot_require_code_grant": False,
                     "verify_key": "0" * 64, "flags": self._app_flags(), "owner": owner, "team": None,
                     "bot": copy.deepcopy(self.bot), "hook": True, "redirect_uris": [], "tags": [],
                     "interactions_endpoint_url": None, "approximate_guild_count": len(self._guilds)}

    def _app_flags(self):
        return APP_GATEWAY_MESSAGE_CONTENT_LIMITED if self.message_content else 0

    def _rest_open_dm(self, body, files):
        recipient = str(body.get("recipient_id", "")) if isinstance(body, dict) else ""
        if not recipient.isdigit():
            return 400, {"message": "Invalid Form Body", "code": 50035, "errors": {"recipient_id": {"_errors": [
                {"code": "NUMBER_TYPE_COERCE", "message": "Value \"{}\" is not snowflake.".format(recipient)}]}}}
        return 200, copy.deepcopy(self._dm(recipient)["object"])

    def _rest_channel(self, channel_id, body, files):
        channel = self._channels.get(channel_id)
        return (200, copy.deepcopy(channel["object"])) if channel else UNKNOWN_CHANNEL

    def _rest_typing(self, channel_id, body, files):
        if channel_id not in self._channels:
            return UNKNOWN_CHANNEL
        self._channels[channel_id]["typing"].append(time.time())
        return 204, None

    def _rest_message(self, channel_id, message_id, body, files):
        entry = self._messages.get(message_id)
        if channel_id not in self._channels:
            return UNKNOWN_CHANNEL
        if entry is None or entry["channel_id"] != channel_id:
            return UNKNOWN_MESSAGE
        return 200, copy.deepcopy(entry["message"])

    def _rest_create(self, channel_id, body, files):
        channel = self._channels.get(channel_id)
        if channel is None:
            return UNKNOWN_CHANNEL
        body = body if isinstance(body, dict) else {}
        content = body.get("content")
        content = "" if content is None else content
        if not isinstance(content, str):
            return NOT_A_STRING
        if len(content) > CONTENT_MAX:
            return TOO_LONG
        embeds = body.get("embeds") or []
        if not content.strip() and not embeds and not files and not body.get("sticker_ids"):
            return EMPTY_MESSAGE
        reference = referenced = None
        ref = body.get("message_reference")
        if isinstance(ref, dict) and ref.get("message_id") is not None:
            target = self._messages.get(str(ref["message_id"]))
            if target is not None and target["channel_id"] == str(ref.get("channel_id") or channel_id):
                reference = {"type": 0, "channel_id": target["channel_id"], "message_id": target["message"]["id"]}
                guild_id = self._channels[target["channel_id"]]["object"].get("guild_id")
                if guild_id:
                    reference["guild_id"] = guild_id
                referenced = copy.deepcopy(target["message"])
                referenced.pop("referenced_message", None)
            elif ref.get("fail_if_not_exists", True):
                return UNKNOWN_REFERENCE
        attachments = [self._store_file(channel_id, f["filename"], f["data"], f["content_type"]) for f in files]
        message = message_object(self._ids.next(), channel_id, copy.deepcopy(self.bot), content,
                                 mentions=self._mentions(content), attachments=attachments, embeds=embeds,
                                 reference=reference, referenced=referenced, nonce=body.get("nonce"))
        self._add_message(channel, message, from_bot=True)
        return 200, copy.deepcopy(message)

    def _rest_edit(self, channel_id, message_id, body, files):
        if channel_id not in self._channels:
            return UNKNOWN_CHANNEL
        entry = self._messages.get(message_id)
        if entry is None or entry["channel_id"] != channel_id:
            return UNKNOWN_MESSAGE
        if not entry["from_bot"]:
            return NOT_AUTHOR
        body = body if isinstance(body, dict) else {}
        message = entry["message"]
        content = body.get("content", message["content"])
        content = "" if content is None else content
        if not isinstance(content, str):
            return NOT_A_STRING
        if len(content) > CONTENT_MAX:
            return TOO_LONG
        embeds = body.get("embeds", message["embeds"]) or []
        if not content.strip() and not embeds and not message["attachments"] and not files:
            return EMPTY_MESSAGE
        self._edits.append({"channel_id": channel_id, "message_id": message_id, "content": content,
                            "previous": message["content"], "time": time.time()})
        message.update(content=content, embeds=embeds, mentions=self._mentions(content), edited_timestamp=now_iso())
        self._dispatch_message("MESSAGE_UPDATE", entry)
        return 200, copy.deepcopy(message)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fake Discord gateway and REST API (offline demo).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8083)
    parser.add_argument("--token", default=DEFAULT_TOKEN)
    parser.add_argument("--message-content", action="store_true", help="allow the MESSAGE_CONTENT intent")
    args = parser.parse_args(argv)
    fake = FakeDiscord(token=args.token, host=args.host, port=args.port, message_content=args.message_content)
    fake.serve_forever("fake Discord (REST at /api/v10)")


if __name__ == "__main__":
    main()
