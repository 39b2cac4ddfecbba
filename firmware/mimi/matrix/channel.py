# The `matrix` channel at work (made once the board is logged in): /sync long polls, invites, messages to the agent,
# replies as m.text (its own words as m.notice) streamed by edits, HTML from the same Markdown as Telegram's.
import asyncio
import json

from mimi import board, matrix
from mimi.bus.message import MATRIX
from mimi.channels.chat_app import ChatApp, RateLimited, Refused
from mimi.health import memory_errors
from mimi.matrix.api import API, MatrixError
from mimi.net.backoff import Backoff
from mimi.net.http import HTTPError
from mimi.platform import const, log
from mimi.storage import files
from mimi.url import quote

_POLL_S = const(30)  # how long the homeserver holds a /sync open when there is nothing new
_BACKOFF_MAX_S = const(60)
_RECENT = const(64)  # event ids handled this boot: one delivered twice is answered once
_BATCHES_MAX = const(32)  # syncs kept while a message waits for its answer (next_batch moves only past answers)
_SYNC_FILE_MAX = const(1024)
# Messages of joined rooms, a small timeline, members loaded lazily: the board never parses a large sync.
_FILTER = quote(json.dumps({
    "presence": {"not_types": ["*"]}, "account_data": {"not_types": ["*"]},
    "room": {"timeline": {"limit": 10, "types": ["m.room.message", "m.room.encrypted"]},
             "state": {"types": ["m.room.encryption"], "lazy_load_members": True},
             "ephemeral": {"not_types": ["*"]}, "account_data": {"not_types": ["*"]}}}))
_ENCRYPTED = ("I cannot read encrypted rooms: this board has no end-to-end encryption. Please talk to me in a room "
              "without encryption (in Element: a new room with 'Enable end-to-end encryption' off).")
_READ = ("m.text", "m.image", "m.file")


class Matrix(ChatApp):
    name = MATRIX
    title = "Matrix"
    ns = matrix.NS
    allow_cmd = "matrix_allow"
    outbox_file = matrix.OUTBOX_FILE
    limit = const(16000)  # characters of one event (the homeserver takes 64 KB of JSON)
    edit_every_ms = const(2500)  # edits count against the homeserver's message rate limit

    def __init__(self, app):
        super().__init__(app)
        self.api = API(app.config)
        self.running = True
        self.syncs = 0
        self._path = files.join(app.flash.root, matrix.SYNC_FILE)
        self.since = self._load_since()
        self._batches = []  # [next_batch, event ids handed to the agent and not yet answered, anything handled]
        self._recent = []
        self._told = []  # encrypted rooms told this boot
        self.encrypted = []  # rooms found encrypted (matrix_status)
        app.config.subscribe(self._on_config)

    def me(self):
        return self.app.config.get(matrix.NS, "user")

    def _load_since(self):
        try:
            state = files.read_json(self._path, _SYNC_FILE_MAX)
        except (ValueError, TypeError):
            state = None
        if isinstance(state, dict) and state.get("user") == self.me() and isinstance(state.get("since"), str):
            return state["since"]
        return None

    def _save_since(self, since):
        self.since = since
        try:
            files.write_atomic(self._path, json.dumps({"user": self.me(), "since": since}))
        except OSError as exc:
            log("Matrix: could not keep the sync position ({})".format(exc))

    def _on_config(self, ns, key):
        if ns == matrix.NS and key in ("token", "homeserver", "user"):
            if key == "user":
                self.since = self._load_since()
            self._wake.set()

    # -- the service --
    async def run(self):
        self.outbox_task = asyncio.create_task(memory_errors.lasting("Matrix outbox", self.run_outbox))
        await memory_errors.lasting("Matrix sync", self._sync_loop)

    async def _sync_loop(self):
        backoff = None
        while True:
            if not matrix.configured(self.app.config):
                self.connected, self.error = False, "not logged in (matrix_set <homeserver-url> <user> <password>)"
                await self.pause(3600)
                continue
            try:
                answer = await self._sync()
            except MatrixError as exc:
                self.connected, self.error = False, str(exc)
                backoff = backoff or Backoff(1, _BACKOFF_MAX_S)
                wait = backoff.next()
                if exc.errcode == "M_LIMIT_EXCEEDED":
                    wait = (exc.retry_ms or 1000) / 1000
                elif exc.status == 401:
                    wait = _BACKOFF_MAX_S
                    log("Matrix: the access token was refused ({}); log in again with matrix_set".format(exc.errcode))
                else:
                    log("Matrix: sync failed: {} (retrying in {} s)".format(exc, wait))
                await self.pause(wait)
                continue
            except (HTTPError, OSError, ValueError) as exc:
                self.connected, self.error = False, str(exc)
                backoff = backoff or Backoff(1, _BACKOFF_MAX_S)
                wait = backoff.next()
                log("Matrix: network error: {} (retrying in {} s)".format(exc, wait))
                await self.pause(wait)
                continue
            if answer is None:  # gave way to another TLS session (small-board mode)
                continue
            if not self.connected:
                log("Matrix: syncing as {}".format(self.me()))
            self.connected, self.error, backoff = True, None, None
            self.syncs += 1
            first = self.since is None
            handed = []
            handled = await self._handle(answer, first, handed)
            token = answer.get("next_batch")
            if isinstance(token, str):
                self._batches.append([token, handed, handled or first])
                if len(self._batches) > _BATCHES_MAX:  # a message whose answer never came (its reply lost) holds
                    log("Matrix: {} messages never answered; the sync position moves past them".format(
                        len(self._batches[0][1])))
                    self._batches[0][1] = []  # no more than this many syncs back: bounded, and a restart moves on
                self._confirm()

    async def _sync(self):
        """One /sync: the answer, or None when small-board mode cut it for another TLS session."""
        path = "/_matrix/client/v3/sync?filter=" + _FILTER
        if self._latest() is None:
            path += "&timeout=0"  # the first sync: the current state only, its messages skipped
        else:
            path += "&timeout={}&since={}".format(_POLL_S * 1000, quote(self._latest()))
        if not board.small():
            return await self.api.call("GET", path, None, _POLL_S + 15)
        cut = [False]

        def give_way():
            cut[0] = True
            call.cancel()

        call = asyncio.create_task(self.api.call("GET", path, None, _POLL_S + 15, give_way=give_way))
        try:
            return await call
        except asyncio.CancelledError:
            if not cut[0]:
                call.cancel()
                raise
        return None

    def _latest(self):
        return self._batches[-1][0] if self._batches else self.since

    def _confirm(self):
        """Keep on flash how far every message is answered: a restart syncs from there."""
        kept = False
        while self._batches and not self._batches[0][1]:
            token, _, handled = self._batches.pop(0)
            self.since, kept = token, kept or handled
        if kept:  # a batch of nothing handled needs no write: a restart before it syncs it again
            self._save_since(self.since)

    def done(self, request):
        event_id = request.get("event")
        if event_id is None:
            return
        for batch in self._batches:
            if event_id in batch[1]:
                batch[1].remove(event_id)
        self._confirm()

    # -- what a sync brings --
    async def _handle(self, answer, first, handed):
        rooms = answer.get("rooms")
        if not isinstance(rooms, dict):
            return False
        handled = False
        for room_id, room in (rooms.get("invite") or {}).items():
            await self._invited(room_id, room)
            handled = True
        for room_id, room in (rooms.get("join") or {}).items():
            if first:
                continue  # messages from before the board's first sync are not answered
            for event in (room.get("timeline") or {}).get("events") or ():
                if isinstance(event, dict):
                    handled = True
                    try:
                        if not await self._event(room_id, event):
                            handed.append(event.get("event_id"))
                    except MemoryError:
                        raise
                    except Exception as exc:  # one bad event never stops the sync
                        log("Matrix: could not handle an event in {}: {}".format(room_id, exc))
        return handled

    async def _invited(self, room_id, room):
        inviter, direct = None, False
        for event in (room.get("invite_state") or {}).get("events") or ():
            if isinstance(event, dict) and event.get("type") == "m.room.member" and event.get("state_key") == self.me():
                inviter = event.get("sender")
                direct = (event.get("content") or {}).get("is_direct") is True
        try:
            if inviter is not None and self.role_of(inviter) is not None:
                await self.api.call("POST", "/_matrix/client/v3/join/" + quote(room_id), {})
                log("Matrix: joined {} at {}'s invitation".format(room_id, inviter))
                if direct:
                    self.remember_direct(room_id, inviter)
            else:
                await self.api.call("POST", "/_matrix/client/v3/rooms/{}/leave".format(quote(room_id)), {})
                log("Matrix: declined an invitation from {} to {} (not allowed: {} {})".format(
                    inviter, room_id, self.allow_cmd, inviter))
        except (MatrixError, HTTPError, OSError) as exc:
            log("Matrix: could not answer the invitation to {}: {}".format(room_id, exc))

    async def _event(self, room_id, event):
        """True when the event is answered here (or needs no answer), False when handed to the agent."""
        sender, event_id = event.get("sender"), event.get("event_id")
        if sender == self.me() or event_id in self._recent:
            return True
        self._recent.append(event_id)
        if len(self._recent) > _RECENT:
            self._recent.pop(0)
        if event.get("type") == "m.room.encrypted":
            if room_id not in self._told:
                self._told.append(room_id)
                if room_id not in self.encrypted:
                    self.encrypted.append(room_id)
                log("Matrix: {} is an encrypted room; the board cannot read it (E2EE is not supported)".format(
                    room_id))
                await self.notice(room_id, _ENCRYPTED)
            return True
        content = event.get("content") or {}
        relation = content.get("m.relates_to") or {}
        if content.get("msgtype") not in _READ or relation.get("rel_type") == "m.replace":
            return True  # notices (other bots), edits, reactions and the like: no answer
        text = content.get("body") if isinstance(content.get("body"), str) else ""
        if not self.is_direct(room_id):  # a room the board joined as a group: answered only when named
            text, named = self._addressed(content, text)
            if not named:
                return True
        media = None
        if content.get("msgtype") != "m.text" and self.role_of(sender) is not None:
            from mimi.agent.attachments import Refused as Unreadable

            try:
                media, text = await self._media(event_id, content, text)
            except Unreadable as exc:
                await self.notice(room_id, str(exc))
                return True
        return await self.incoming(sender, room_id, text, {"event": event_id}, media)

    def _addressed(self, content, text):
        """(text without the board's name, True) when a group message names the board, else (text, False)."""
        me = self.me()
        mentions = content.get("m.mentions") or {}
        named = me in (mentions.get("user_ids") or ())
        local = me[1:].split(":", 1)[0] if me.startswith("@") else me
        for name in (me, local):
            at = text.lower().find(name.lower())
            if at >= 0:
                named = True
                text = (text[:at] + text[at + len(name):]).strip(" :,")
                break
        return " ".join(text.split()), named

    async def _media(self, event_id, content, text):
        """A photo or file through the authenticated media API: (meta's media, its caption)."""
        from mimi.agent.attachments import Refused as Unreadable, safe_name

        info = content.get("info") or {}
        name = content.get("filename") or text or "file"
        caption = text if content.get("filename") and text != content.get("filename") else ""
        url = content.get("url")
        if not isinstance(url, str) or not url.startswith("mxc://") or "/" not in url[6:]:
            raise Unreadable("I could not find the file in your message.")
        server, media_id = url[6:].split("/", 1)
        address = "{}/_matrix/client/v1/media/download/{}/{}".format(self.api.base(), quote(server), quote(media_id))
        headers = {"authorization": "Bearer " + self.app.config.get(matrix.NS, "token")}
        media = await self.receive("mx_" + safe_name(event_id[1:13]), address, headers, name,
                                   str(info.get("mimetype") or "").lower(),
                                   info.get("size") if isinstance(info.get("size"), int) else None,
                                   content.get("msgtype") == "m.image")
        return media, caption

    # -- sending (channels/chat_app.py calls these) --
    async def post(self, chat_id, html, plain, notice, key):
        body = {"msgtype": "m.notice" if notice else "m.text", "body": plain}
        if html is not None and html != plain:
            body["format"], body["formatted_body"] = "org.matrix.custom.html", html
        answer = await self._send(chat_id, body, key)
        return answer.get("event_id")

    async def edit(self, chat_id, message_id, html, plain):
        new = {"msgtype": "m.text", "body": plain}
        if html is not None and html != plain:
            new["format"], new["formatted_body"] = "org.matrix.custom.html", html
        body = {"msgtype": "m.text", "body": "* " + plain, "m.new_content": new,
                "m.relates_to": {"rel_type": "m.replace", "event_id": message_id}}
        await self._send(chat_id, body, self._key())

    async def _send(self, room_id, body, key):
        path = "/_matrix/client/v3/rooms/{}/send/m.room.message/{}".format(quote(room_id), quote(key))
        try:
            return await self.api.call("PUT", path, body)
        except MatrixError as exc:
            if exc.errcode == "M_LIMIT_EXCEEDED":
                raise RateLimited((exc.retry_ms or 1000) / 1000)
            if exc.status >= 500:
                raise HTTPError("the homeserver answered {}".format(exc.status))
            raise Refused(str(exc))

    async def typing(self, chat_id):
        path = "/_matrix/client/v3/rooms/{}/typing/{}".format(quote(chat_id), quote(self.me()))
        try:
            await self.api.call("PUT", path, {"typing": True, "timeout": 30000})
        except (MatrixError, HTTPError, OSError):
            pass
