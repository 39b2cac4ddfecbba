# A chat app on the channel base (Matrix, Discord): who may talk (users and roles by the app's own ids), strangers
# told their id, /new and /help, yes/no confirmations, replies streamed by editing one message, and an outbox on
# flash: a reply the app did not take is sent again later, under the same key (at least once, never doubled).
import asyncio
import json
import os

from mimi import board, platform
from mimi.bus.message import Message
from mimi.channels import Channel
from mimi.channels.direct import chat_key
from mimi.health import memory_errors
from mimi.net.http import HTTPError, NotSent, SessionBusy
from mimi.platform import const, log
from mimi.safety import roles
from mimi.storage import files, space
from mimi.telegram import markup

_STRANGERS_REMEMBERED = const(32)  # each stranger is told how to get in once per boot
_OUTBOX_MAX = const(8)  # replies waiting; a ninth pushes out the oldest (it is still in its chat's session)
_OUTBOX_BYTES = const(32 * 1024)
_SEND_TRIES = const(4)  # rate-limit answers to one message before it waits in the outbox
_PATIENCE_S = const(20)  # network trouble a message waits out before it goes to the outbox
_DIRECT_MAX = const(16)  # direct chats remembered with their user (the owner's own chats: roles.of_chat)
_NEW, _HELP_WORDS = "/new", ("/help", "/start")
_HELP = ("I'm Mimi, a pocket assistant living on an ESP32-S3. Just write to me.\n"
         "/new starts a fresh conversation, /help shows this message.")
_YES, _NO = ("yes", "y", "approve", "ok"), ("no", "n", "deny")
_ASK = "{}\nAnswer yes or no (within {} s)."


class RateLimited(Exception):
    """The app asked to wait `seconds` before the next message."""

    def __init__(self, seconds):
        super().__init__("rate limited for {} s".format(seconds))
        self.seconds = seconds


class Refused(Exception):
    """The app refused a message for good (bad request, no access): sending it again will not help."""


def parse_users(text):
    """[[user, role], ...] from "id=role,id=role" (the allow setting); malformed parts skipped."""
    users = []
    for part in (text or "").split(","):
        user, _, role = part.strip().rpartition("=")
        if user and role in roles.ROLES:
            users.append([user, role])
    return users


def _stopped(exc):
    return isinstance(exc, (NotSent, SessionBusy))


class _Stream:
    __slots__ = ("parts", "size", "message_id", "shown", "status", "changed", "finished", "task")

    def __init__(self):
        self.parts, self.size = [], 0
        self.message_id = None  # the message being edited while the reply streams
        self.shown = self.status = ""
        self.changed = asyncio.Event()
        self.finished = False
        self.task = None


class ChatApp(Channel):
    """A subclass names its app (name, title, ns, allow_cmd, limit, edit_every_ms, outbox_file) and gives
    post(chat_id, html, plain, notice, key) -> the message id, edit(chat_id, message_id, html, plain) and
    typing(chat_id); its reader calls incoming() for each message meant for the board."""

    streams = True
    title = ns = allow_cmd = outbox_file = None
    limit = const(2000)  # characters of one message
    edit_every_ms = const(1500)  # between two edits of a streaming reply
    retry_s = const(30)  # between the outbox's tries

    def __init__(self, app):
        self.app = app
        self.received = self.answered = 0
        self.error = None  # the last trouble, for status
        self.connected = False
        self._strangers = []
        self._streams = {}
        self._quiet_until = 0  # ticks: previews pause after a rate limit
        self._keys = 0
        self._boot_key = "".join("{:02x}".format(b) for b in os.urandom(3))  # keys of an earlier boot never match
        self.outbox = []  # [{"chat", "parts": [[html, plain, key], ...], "notice"}]
        self._outbox_path = files.join(app.flash.root, self.outbox_file)
        self._outbox_wake = asyncio.Event()
        self._wake = asyncio.Event()  # a setting changed: the reader stops waiting (pause)
        self._load_outbox()

    async def pause(self, seconds):
        """Wait seconds, or less when a setting of the app changes (the reader's waits between tries)."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    # -- the app's own calls (subclasses) --
    async def post(self, chat_id, html, plain, notice, key):
        """A new message (html may be None; notice: the board's own words; key: the app's idempotency key, so
        a resend is not doubled): its id. RateLimited, Refused, or http.HTTPError / OSError."""
        raise NotImplementedError

    async def edit(self, chat_id, message_id, html, plain):
        """The message's text replaced (Refused when it is gone)."""
        raise NotImplementedError

    async def typing(self, chat_id):
        """Show that a reply is coming, where the app can (never raises)."""

    # -- who may talk --
    def users(self):
        return parse_users(self.app.config.get(self.ns, "allow"))

    def role_of(self, user):
        """The user's role, or None for a stranger."""
        for known, role in self.users():
            if known == user:
                return role
        return None

    def owners(self):
        return [user for user, role in self.users() if role == roles.OWNER]

    def allow(self, user, role=None):
        users = self.users()
        for entry in users:
            if entry[0] == user:
                entry[1] = role or entry[1]
                break
        else:
            users.append([user, role or roles.DEFAULT_ROLE])
        self._save_users(users)
        return len(users)

    def deny(self, user):
        users = self.users()
        kept = [entry for entry in users if entry[0] != user]
        if len(kept) != len(users):
            self._save_users(kept)
        self._forget_direct(user)
        return len(kept) != len(users)

    def _save_users(self, users):
        self.app.config.set(self.ns, "allow", ",".join("{}={}".format(user, role) for user, role in users))

    def remember_direct(self, chat_id, user):
        """chat_id is a direct chat with user only: roles.of_chat gives it that user's trust."""
        key = chat_key(chat_id)
        pairs = [p for p in self.app.config.get(self.ns, "direct").split(",") if "=" in p]
        entry = "{}={}".format(key, user)
        if entry in pairs:
            return
        pairs = [p for p in pairs if not p.startswith(key + "=")][-(_DIRECT_MAX - 1):] + [entry]
        while pairs:
            try:
                self.app.config.set(self.ns, "direct", ",".join(pairs))
                return
            except ValueError:  # too long for one setting: the oldest go
                pairs.pop(0)

    def is_direct(self, chat_id):
        """True for a chat remembered as a direct chat with one allowed user (remember_direct)."""
        key = chat_key(chat_id) + "="
        for pair in self.app.config.get(self.ns, "direct").split(","):
            if pair.startswith(key):
                return True
        return False

    def _forget_direct(self, user):
        pairs = [p for p in self.app.config.get(self.ns, "direct").split(",") if p and not p.endswith("=" + user)]
        self.app.config.set(self.ns, "direct", ",".join(pairs))

    # -- incoming --
    async def incoming(self, user, chat_id, text, meta=None, media=None, shown_name=None):
        """A message meant for the board (a direct chat, or a group that named it): True when answered here,
        False when the agent will answer (its meta names `request`, handed back in send's)."""
        self.received += 1
        role = self.role_of(user)
        if role is None:
            await self._stranger(user, chat_id, shown_name)
            return True
        text = text.strip()
        word = text.lower()
        if self._answers_question(chat_id, user, role, word):
            return True
        command = word.split()[0] if word else ""
        if command in _HELP_WORDS:
            rules = self.app.rules()
            extra = "\n" + "\n".join(rules.help_lines()) if rules is not None and rules.words else ""
            await self.notice(chat_id, _HELP + extra)
            return True
        if command == _NEW:
            removed = self.app.sessions.clear(self.app.sessions.stem(self.name, chat_id))
            await self.notice(chat_id, "Started a fresh conversation." if removed
                              else "This conversation is already fresh.")
            return True
        if not text and media is None:
            await self.notice(chat_id, "Yes? Write your question after my name.")
            return True
        meta = dict(meta or {})
        meta["user_id"], meta["role"] = user, role
        if media is not None:
            from mimi.agent import attachments

            meta["media"] = media
            text = attachments.question(text, media)
        await self.app.deliver(Message(self.name, chat_id, text, meta))
        return False

    async def _stranger(self, user, chat_id, shown_name):
        if user in self._strangers:
            return
        self._strangers.append(user)
        if len(self._strangers) > _STRANGERS_REMEMBERED:
            self._strangers.pop(0)
        log("{} user {}{} wants to chat: {} {}".format(self.title, user, " ({})".format(shown_name)
                                                       if shown_name else "", self.allow_cmd, user))
        await self.notice(chat_id, "Sorry, I only talk to people my owner has admitted. Your {} user id is {}: ask "
                                   "the owner to run {} {} on my console.".format(self.title, user, self.allow_cmd,
                                                                                    user))

    def _answers_question(self, chat_id, user, role, word):
        """A yes or no in a chat with an open question answers its oldest one."""
        questions = getattr(getattr(self.app, "policy", None), "questions", None)
        if questions is None or word not in _YES + _NO:
            return False
        question = questions.oldest(self.name)
        if question is None or question.chat_id != str(chat_id):
            return False
        from mimi.safety import confirm

        def may(asked):
            if asked.asker is not None:
                return user == asked.asker or role == roles.OWNER
            return roles.allows(role, asked.needed or roles.OWNER)

        outcome = confirm.answer(self.app, self.name, chat_id, question.id, word in _YES, may)
        return outcome == confirm.SETTLED

    async def confirm(self, question, seconds):
        from mimi.safety import confirm

        await self.notice(question.chat_id, _ASK.format(question.text(), seconds))
        outcome = await question.wait(seconds)
        await self.notice(question.chat_id, confirm.OUTCOME_SHOWN[outcome])
        return outcome

    async def notice(self, chat_id, text):
        """The board's own words (help, refusals, outcomes): plain, tried once more after a rate limit, never
        raising."""
        try:
            await self._deliver(chat_id, [[None, part, self._key()] for part in markup.split(text, self.limit)], True)
        except Exception as exc:
            log("{}: could not tell {}: {}".format(self.title, chat_id, exc))

    # -- streaming (the agent's calls) --
    async def on_start(self, chat_id):
        await self._stop(chat_id)
        stream = self._streams[chat_id] = _Stream()
        if not board.small():  # small-board mode: one TLS session, the model's; the reply comes whole
            stream.task = asyncio.create_task(self._preview(chat_id, stream))

    async def on_delta(self, chat_id, text):
        stream = self._streams.get(chat_id)
        if stream is not None:
            stream.status = ""
            stream.parts.append(text)
            stream.size += len(text)
            while len(stream.parts) > 1 and stream.size - len(stream.parts[0]) >= self.limit:
                stream.size -= len(stream.parts.pop(0))  # the preview shows the newest part of a long reply
            stream.changed.set()

    async def on_tool(self, chat_id, name):
        stream = self._streams.get(chat_id)
        if stream is not None:
            from mimi.llm.claude_tools import activity

            stream.status = "\n\n_{}\u2026_".format(activity(name))
            stream.changed.set()

    async def _stop(self, chat_id):
        stream = self._streams.pop(chat_id, None)
        if stream is not None:
            stream.finished = True
            stream.changed.set()
            try:
                if stream.task is not None:
                    await stream.task
            except Exception as exc:  # a preview failure never blocks the final reply
                log("{}: preview failed: {}".format(self.title, exc))
        return stream

    async def _preview(self, chat_id, stream):
        try:
            await self.typing(chat_id)
        except Exception:  # a missing typing notice costs nothing
            pass
        while not stream.finished:
            await stream.changed.wait()
            if stream.finished:
                return
            if platform.ticks_diff(self._quiet_until, platform.ticks_ms()) > 0:
                await asyncio.sleep(0.5)
                continue
            stream.changed.clear()
            text = "".join(stream.parts)
            if len(text) > self.limit - 40:
                text = "\u2026" + markup.tail(text, self.limit - 40)
            stream.parts, stream.size = [text], len(text)
            text += stream.status
            if text.strip() and text != stream.shown:
                try:
                    if stream.message_id is None:
                        stream.message_id = await self.post(chat_id, markup.to_html(text), text, False, self._key())
                    else:
                        await self.edit(chat_id, stream.message_id, markup.to_html(text), text)
                    stream.shown = text
                except RateLimited as exc:
                    self._quiet_until = platform.ticks_add(platform.ticks_ms(), int(exc.seconds * 1000))
                except (Refused, HTTPError, OSError) as exc:
                    if not _stopped(exc):
                        log("{}: preview update failed: {}".format(self.title, exc))
            await asyncio.sleep(self.edit_every_ms / 1000)

    def _key(self):
        self._keys += 1
        return "{}{}".format(self._boot_key, self._keys)

    # -- the final reply (the dispatcher's call) --
    async def send(self, message):
        meta = message.meta
        request = meta.get("request") or {}
        kind = meta.get("kind")
        chat_id = message.chat_id
        try:
            if kind in ("report", "notice"):  # beside a reply that may be streaming
                await self._deliver(chat_id, self._parts(message.text, False), True)
                return
            stream = await self._stop(chat_id)
            edit_id = stream.message_id if stream is not None and kind != "error" else None
            parts = self._parts(message.text, kind == "error")
            waiting = [entry for entry in self.outbox if entry["chat"] == chat_id]
            if waiting:  # an older reply still waits: this one goes after it
                self._hold(chat_id, parts, False)
                return
            await self._deliver(chat_id, parts, False, edit_id)
            self.answered += 1
        except Refused as exc:
            log("{}: {} refused a reply to {}: {}".format(self.title, self.title, chat_id, exc))
        finally:
            self.done(request)

    def done(self, request):
        """The reply to this request was sent or given up: a reader confirms it (subclasses)."""

    def _parts(self, text, is_error):
        if is_error:
            return [[None, part, self._key()] for part in markup.split("\u26a0\ufe0f " + str(text), self.limit)]
        return [[html, plain, self._key()] for html, plain in markup.split_html(str(text), self.limit)]

    async def _deliver(self, chat_id, parts, notice, edit_id=None):
        """Send the parts in order (the first as an edit of edit_id when given); what the app did not take in
        time waits in the outbox, under the same keys."""
        for i, part in enumerate(parts):
            try:
                await self._one(chat_id, part, notice, edit_id if i == 0 else None)
            except (RateLimited, HTTPError, OSError) as exc:
                self.error = str(exc)
                log("{}: a reply to {} waits ({}); it is sent once {} answers".format(
                    self.title, chat_id, exc, self.title))
                self._hold(chat_id, parts[i:], notice)
                return

    async def _one(self, chat_id, part, notice, edit_id=None):
        """One message, waiting out rate limits and a short network trouble; raises what outlasts them."""
        waited = 0
        for attempt in range(_SEND_TRIES):
            quiet = platform.ticks_diff(self._quiet_until, platform.ticks_ms())
            if quiet > 0:  # the app said wait: nothing goes before that
                await asyncio.sleep(quiet / 1000)
            try:
                if edit_id is not None:
                    try:
                        await self.edit(chat_id, edit_id, part[0], part[1])
                        return
                    except Refused:  # the message to edit is gone: send the reply as a new one
                        edit_id = None
                await self.post(chat_id, part[0], part[1], notice, part[2])
                return
            except RateLimited as exc:
                self._quiet_until = platform.ticks_add(platform.ticks_ms(), int(exc.seconds * 1000))
                if attempt == _SEND_TRIES - 1:
                    raise
            except (HTTPError, OSError) as exc:
                if waited >= _PATIENCE_S or not self.transient(exc):
                    raise
                await asyncio.sleep(2)
                waited += 2

    async def receive(self, stem, url, headers, name, mime, size, image=False):
        """A user's photo or file streamed from url to flash (never whole in RAM): meta's media for the agent.
        attachments.Refused with the answer for the user (too big, a kind the model cannot read, the download
        failed), nothing left on flash."""
        from mimi.agent import attachments
        from mimi.net import http

        limits = attachments.limits(self.app.config)
        if image or mime in attachments.PHOTO_TYPES:
            kind, cap, what = "image", limits[0], "photo"
            if size is not None and size > cap:
                raise attachments.Refused("This photo is {}, over my limit of {}. Please send a smaller one.".format(
                    attachments.size_text(size), attachments.size_text(cap)))
        else:
            kind, cap, what = attachments.document_kind(name, mime, size, limits[2]), limits[2], "file"
        ext = "." + attachments.safe_name(name.rsplit(".", 1)[-1].lower() if "." in name else "bin", "bin")[:8]
        path = attachments.inbox_path(self.app.flash.root, stem, ext)
        try:
            response = await http.request("GET", url, headers, None, 30, None, 120)
        except (HTTPError, OSError) as exc:
            raise attachments.Refused("I could not fetch your {} from {} ({}). Please send it again.".format(
                what, self.title, exc))
        try:
            if response.status != 200:
                raise attachments.Refused("{} would not give me your {} (HTTP {}). Please send it again.".format(
                    self.title, what, response.status))
            got = await response.save(path, cap, 1024)
            if got is None:
                raise attachments.Refused("Your {} is over my limit of {}.".format(what, attachments.size_text(cap)))
            media_type = attachments.sniff_image(path) if kind == "image" else (
                "application/pdf" if kind == "pdf" else "text/plain")
            if media_type is None:
                raise attachments.Refused("This image is not a JPEG, PNG, GIF or WebP file, so I cannot look at it.")
        except BaseException:
            files.remove(path)
            raise
        finally:
            await response.aclose()
        return attachments.media(kind, path, media_type, attachments.safe_name(name), got)

    def transient(self, exc):
        """A failure worth trying again soon (the app's 5xx: subclasses say)."""
        return _stopped(exc) or isinstance(exc, HTTPError)

    # -- the outbox --
    def _load_outbox(self):
        try:
            found = files.read_json(self._outbox_path, _OUTBOX_BYTES)
        except (ValueError, TypeError) as exc:
            log("{}: {} is unreadable ({}); no replies are waiting".format(self.title, self._outbox_path, exc))
            return
        if isinstance(found, list):
            self.outbox = [e for e in found if isinstance(e, dict) and "chat" in e and e.get("parts")]
        if self.outbox:
            count = len(self.outbox)
            log("{}: {} waiting to be delivered".format(self.title, "1 reply is" if count == 1
                                                        else "{} replies are".format(count)))

    def _hold(self, chat_id, parts, notice):
        self.outbox.append({"chat": chat_id, "parts": [list(p) for p in parts], "notice": notice})
        while len(self.outbox) > _OUTBOX_MAX:
            dropped = self.outbox.pop(0)
            log("{}: a waiting reply to {} was dropped (more than {} wait)".format(
                self.title, dropped["chat"], _OUTBOX_MAX))
        self._save_outbox()
        self._outbox_wake.set()

    def _save_outbox(self):
        data = json.dumps(self.outbox)
        while len(data) > _OUTBOX_BYTES and len(self.outbox) > 1:
            self.outbox.pop(0)
            data = json.dumps(self.outbox)
        try:
            space.guarded(lambda: files.write_atomic(self._outbox_path, data), "replies waiting for " + self.title,
                          (self._outbox_path,))
        except OSError as exc:  # kept in RAM: they still go out unless the device restarts first
            log("{}: could not save the waiting replies ({})".format(self.title, exc))

    async def run_outbox(self):
        """Deliver waiting replies, oldest first, each part under its own key; runs beside the reader."""
        while True:
            if not self.outbox:
                self._outbox_wake.clear()
                await self._outbox_wake.wait()
            await asyncio.sleep(1 if self.connected else self.retry_s)
            while self.outbox:
                entry = self.outbox[0]
                try:
                    while entry["parts"]:
                        part = entry["parts"][0]
                        await self.post(entry["chat"], part[0], part[1], entry.get("notice"), part[2])
                        entry["parts"].pop(0)
                        self._save_outbox()
                except RateLimited as exc:
                    await asyncio.sleep(exc.seconds)
                    continue
                except Refused as exc:
                    log("{}: a waiting reply to {} was refused: {}".format(self.title, entry["chat"], exc))
                except (HTTPError, OSError, MemoryError) as exc:
                    if isinstance(exc, MemoryError):
                        memory_errors.short(self.name + " outbox", exc)
                    break  # still out of reach: the next round
                self.outbox.pop(0)
                self._save_outbox()
                log("{}: a waiting reply to {} was delivered".format(self.title, entry["chat"]))


class Offline(ChatApp):
    """The users and roles of a chat app not made yet (no login or token): the same settings, no reader, no
    outbox."""

    def __init__(self, app, ns, title, allow_cmd):
        self.app, self.ns, self.title, self.allow_cmd = app, ns, title, allow_cmd


def for_console(app, name, ns, title):
    """What a chat app's console commands edit: its channel when made, else its settings alone."""
    return app.part(name) or Offline(app, ns, title, name + "_allow")


def allow_said(channel, user, role):
    """Admit user (or change their role): what the console says. ValueError for an unknown role."""
    if role is not None and role not in roles.ROLES:
        raise ValueError("role must be one of {}".format(", ".join(roles.ROLES)))
    count = channel.allow(user, role)
    return "{} user {} may now talk to the board as {} ({} allowed)".format(channel.title, user,
                                                                         channel.role_of(user), count)


def deny_said(channel, user):
    if channel.deny(user):
        return "{} user {} removed ({} allowed)".format(channel.title, user, len(channel.users()))
    return "{} user {} was not allowed".format(channel.title, user)


def allowed_said(channel):
    users = channel.users()
    return "  allowed: {}".format(", ".join("{} ({})".format(u, r) for u, r in users) if users
                                  else "nobody yet ({} <user> [role])".format(channel.allow_cmd))
