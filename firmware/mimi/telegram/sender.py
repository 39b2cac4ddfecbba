# Telegram replies: a live draft (or an edited message) while Claude streams, then the final message.
import asyncio

from mimi import board, platform
from mimi.net.backoff import Backoff
from mimi.net.http import HTTPError, NotSent, SessionBusy
from mimi.platform import const, log
from mimi.telegram import markup
from mimi.telegram.api import CALL_TIMEOUT_S, TelegramError
from mimi.telegram.outbox import Undelivered

_DRAFT_INTERVAL_MS = const(1000)  # about one visible update per second
DRAFT_TAIL = const(3500)  # a draft shows the newest part of a long reply
_TYPING_EVERY_MS = const(4500)  # the typing action lasts about 5 s
_SEND_TRIES = const(3)  # 429 answers to one part before giving up
_DELIVERY_PATIENCE_S = const(150)  # how long a reply waits for the network (or Telegram's 5xx) to come back
_DELIVERY_BACKOFF_FIRST_S = const(2)
_DELIVERY_BACKOFF_MAX_S = const(30)


def _chat(chat_id):
    # The bus carries chat ids as text; the Bot API wants the number back.
    text = str(chat_id)
    return int(text) if text.lstrip("-").isdigit() else text


def _parse_error(exc):
    return isinstance(exc, TelegramError) and exc.code == 400 and "parse entities" in exc.description


def _not_modified(exc):
    return isinstance(exc, TelegramError) and "not modified" in exc.description


class _Stream:
    """One reply being streamed into one chat."""

    def __init__(self, draft_id):
        self.parts = []  # the reply's newest pieces, about DRAFT_TAIL characters: the draft's text
        self.size = 0  # characters in parts
        self.draft_id = draft_id
        self.changed = asyncio.Event()
        self.finished = False
        self.message_id = None  # the message being edited when drafts are refused
        self.shown = ""
        self.status = ""  # a progress line under the text, e.g. "using get_weather..."
        self.cut = False  # the draft no longer holds the start of the reply
        self.task = None


def _transient(exc):
    """True for a failure after which the reply surely did not arrive and may be sent again later."""
    return isinstance(exc, NotSent) or (isinstance(exc, TelegramError) and (exc.code >= 500 or exc.code == 429))


class Sender:
    patience_s = _DELIVERY_PATIENCE_S  # class attributes, so tests (and --health) can shorten them
    backoff_first_s = _DELIVERY_BACKOFF_FIRST_S

    def __init__(self, api):
        self.api = api
        self.drafts_ok = True  # until Telegram refuses sendMessageDraft once
        self._streams = {}
        self._draft_ids = 0
        self._quiet_until = 0  # ticks: after a 429 on a draft, previews pause until then

    # -- while the agent works --
    async def start(self, chat_id):
        await self.stop(chat_id)
        self._draft_ids += 1
        stream = _Stream(self._draft_ids)
        self._streams[chat_id] = stream
        stream.task = asyncio.create_task(self._preview(chat_id, stream))

    async def delta(self, chat_id, text):
        stream = self._streams.get(chat_id)
        if stream is not None:
            stream.status = ""
            parts = stream.parts
            parts.append(text)
            stream.size += len(text)
            # Pieces older than the draft's tail are let go as they come: a preview held back (a 429, a slow
            # send) joins no more than about DRAFT_TAIL characters, never the whole reply.
            while len(parts) > 1 and stream.size - len(parts[0]) >= DRAFT_TAIL:
                stream.size -= len(parts.pop(0))
                stream.cut = True
            stream.changed.set()

    async def tool(self, chat_id, name):
        """Show "using <tool>" at the end of the live draft until more text arrives."""
        stream = self._streams.get(chat_id)
        if stream is not None:
            from mimi.llm.claude_tools import activity  # web tools: "searching the web..."

            doing = activity(name)
            stream.status = "\n\n_{}\u2026_".format(doing)
            stream.changed.set()

    async def stop(self, chat_id):
        stream = self._streams.pop(chat_id, None)
        if stream is not None:
            stream.finished = True
            stream.changed.set()
            if stream.task is not None:
                try:
                    await stream.task
                except Exception as exc:  # a preview failure never blocks the final reply
                    log("Telegram: preview failed: {}".format(exc))
        return stream

    async def _preview(self, chat_id, stream):
        await self._quietly("sendChatAction", {"chat_id": _chat(chat_id), "action": "typing"})
        typed = platform.ticks_ms()
        while not stream.finished:
            try:
                await asyncio.wait_for(stream.changed.wait(), _TYPING_EVERY_MS / 1000)
            except asyncio.TimeoutError:
                pass
            if stream.finished:
                return
            now = platform.ticks_ms()
            if not stream.changed.is_set() or platform.ticks_diff(self._quiet_until, now) > 0:
                if platform.ticks_diff(now, typed) >= _TYPING_EVERY_MS and not stream.shown:
                    await self._quietly("sendChatAction", {"chat_id": _chat(chat_id), "action": "typing"})
                    typed = now
                continue
            stream.changed.clear()
            text = "".join(stream.parts)
            if len(text) > DRAFT_TAIL:  # the draft shows the newest part; keep no more than that
                text = markup.tail(text, DRAFT_TAIL)
                stream.cut = True
            stream.parts, stream.size = [text], len(text)
            if stream.cut:
                text = "\u2026" + text
            text += stream.status
            await self._show(chat_id, stream, text)
            await asyncio.sleep(_DRAFT_INTERVAL_MS / 1000)

    async def _show(self, chat_id, stream, text):
        if not text.strip() or text == stream.shown:
            return
        try:
            if self.drafts_ok and not str(chat_id).startswith("-"):  # drafts exist in private chats only
                await self._with_fallback("sendMessageDraft", {"chat_id": _chat(chat_id), "draft_id": stream.draft_id},
                                          text)
            elif stream.message_id is None:
                sent = await self._with_fallback("sendMessage", {"chat_id": _chat(chat_id)}, text)
                stream.message_id = sent.get("message_id") if isinstance(sent, dict) else None
            else:
                await self._with_fallback(
                    "editMessageText", {"chat_id": _chat(chat_id), "message_id": stream.message_id}, text
                )
            stream.shown = text
        except TelegramError as exc:
            if exc.code == 429:
                self._quiet_until = platform.ticks_add(platform.ticks_ms(), (exc.retry_after or 1) * 1000)
            elif self.drafts_ok and exc.code in (400, 404) and not _not_modified(exc) \
                    and not str(chat_id).startswith("-"):
                log("Telegram: drafts refused ({}); streaming by editing a message".format(exc.description))
                self.drafts_ok = False
                await self._show(chat_id, stream, text)
            elif not _not_modified(exc):
                log("Telegram: preview update failed: {}".format(exc))
        except SessionBusy:  # small-board mode: Claude streams over the one TLS session; the final message follows
            pass
        except (HTTPError, OSError) as exc:
            log("Telegram: preview update failed: {}".format(exc))

    def _preview_call(self, method, params):
        """A preview's call; in small-board mode it never waits behind the one TLS session (SessionBusy)."""
        if board.small():
            return self.api.call(method, params, CALL_TIMEOUT_S, give_way=None, wait=False)
        return self.api.call(method, params)

    async def _with_fallback(self, method, params, markdown):
        """Send as HTML rendered from Markdown; if Telegram cannot parse it, the same text as plain."""
        params["text"] = markup.to_html(markdown)
        params["parse_mode"] = "HTML"
        try:
            return await self._preview_call(method, params)
        except TelegramError as exc:
            if not _parse_error(exc):
                raise
        del params["parse_mode"]
        params["text"] = markdown
        return await self._preview_call(method, params)

    async def _quietly(self, method, params):
        try:
            await self._preview_call(method, params)
        except SessionBusy:
            pass
        except (TelegramError, HTTPError, OSError) as exc:
            log("Telegram: {} failed: {}".format(method, exc))

    # -- the final reply --
    @staticmethod
    def parts(text, is_error=False):
        """The [html or None, plain] messages a final reply is sent as, split at 4096 characters."""
        if is_error:
            return Sender.plain_parts("\u26a0\ufe0f " + str(text))
        return markup.split_html(text, markup.MESSAGE_LIMIT)

    @staticmethod
    def plain_parts(text):
        """The same for text sent as it is (reports, notices, errors): no HTML."""
        return [(None, part) for part in markup.split(text, markup.MESSAGE_LIMIT)]

    async def reply(self, chat_id, text, is_error=False):
        """Deliver the final text; Undelivered (with the parts not shown) when the network or Telegram's
        5xx outlast the patience, another error when Telegram refuses it."""
        stream = await self.stop(chat_id)
        editing = stream is not None and stream.message_id is not None and not is_error
        await self._send_parts(chat_id, self.parts(text, is_error), stream.message_id if editing else None)

    async def send_plain(self, chat_id, text, reply_to=None):
        """Text as it is; reply_to: the message_id in the chat it answers (a voice note's transcript)."""
        extra = None if reply_to is None else {"message_id": reply_to, "allow_sending_without_reply": True}
        await self._send_parts(chat_id, self.plain_parts(text), None, extra)

    def editing(self, chat_id):
        """True while the reply streaming into the chat shows as a message being edited (not a draft)."""
        stream = self._streams.get(chat_id)
        return stream is not None and stream.message_id is not None

    async def deliver_part(self, chat_id, html, plain):
        """One waiting part as a new message, tried once (the outbox has its own rhythm, and a console
        line per failed try would flood it); Undelivered while Telegram is out of reach."""
        try:
            await self._deliver_once("sendMessage", {"chat_id": _chat(chat_id)}, html, plain)
        except Exception as exc:
            if _transient(exc):
                raise Undelivered([(html, plain)], exc)
            raise

    async def _send_parts(self, chat_id, parts, edit_id=None, reply_parameters=None):
        for i, (html, plain) in enumerate(parts):
            try:
                if i == 0 and edit_id is not None:  # the message that showed the reply streaming
                    await self._deliver("editMessageText", {"chat_id": _chat(chat_id), "message_id": edit_id},
                                        html, plain)
                elif i == 0 and reply_parameters is not None:
                    await self._deliver("sendMessage", {"chat_id": _chat(chat_id),
                                                        "reply_parameters": reply_parameters}, html, plain)
                else:
                    await self._deliver("sendMessage", {"chat_id": _chat(chat_id)}, html, plain)
            except Exception as exc:
                if _transient(exc):
                    raise Undelivered(parts[i:], exc)
                raise

    async def _deliver(self, method, params, html, plain):
        """Send one part. Retried while it is safe: 429 (after retry_after), Telegram's 5xx, and a request
        that never left the device (WiFi down, no connection); a call that may have arrived is not repeated."""
        waited, backoff = 0, Backoff(self.backoff_first_s, _DELIVERY_BACKOFF_MAX_S)
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._deliver_once(method, params, html, plain)
            except TelegramError as exc:
                if _not_modified(exc):
                    return None
                if exc.code == 429 and attempt < _SEND_TRIES:
                    wait = exc.retry_after or 1
                    backoff.next()  # the backoff moves on whatever this failure waits
                elif exc.code >= 500 and waited < self.patience_s:
                    wait = backoff.next()
                else:
                    raise
            except NotSent as exc:
                if waited >= self.patience_s:
                    raise
                wait = backoff.next()
                log("Telegram: reply not sent ({}); trying again in {} s".format(exc, wait))
            await asyncio.sleep(wait)
            waited += wait

    async def _deliver_once(self, method, params, html, plain):
        if html is not None:
            try:
                return await self.api.call(method, dict(params, text=html, parse_mode="HTML"))
            except TelegramError as exc:
                if not _parse_error(exc):
                    raise
                log("Telegram: HTML refused ({}); sending plain text".format(exc.description))
        return await self.api.call(method, dict(params, text=plain))
