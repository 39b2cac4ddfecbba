# Replies Telegram could not take in time (network down, Telegram's 5xx): kept on flash, sent once it answers.
import asyncio
import json

from mimi.health import memory_errors
from mimi.platform import const, log
from mimi.storage import files, space
from mimi.telegram import OUTBOX_FILE
from mimi.telegram.api import TelegramError

REPLIES_MAX = const(8)  # replies waiting; a ninth pushes out the oldest (it is still in its chat's session)
FILE_MAX = const(32 * 1024)  # bytes of waiting text; the oldest replies go first when over
_RETRY_S = const(30)  # between attempts while Telegram stays out of reach


class Undelivered(Exception):
    """Telegram did not take a reply (network down or its 5xx past the sender's patience).

    `parts` are the [html or None, plain] pairs not yet shown in the chat, in order; `cause` says why."""

    def __init__(self, parts, cause):
        super().__init__(str(cause))
        self.parts = parts
        self.cause = cause


class Outbox:
    """Waiting replies: [{"chat": chat_id, "parts": [[html, plain], ...]}], oldest first, written atomically."""

    retry_s = _RETRY_S  # a class attribute, so tests (and --health) can shorten it

    def __init__(self, data_root, sender):
        self.path = files.join(data_root, OUTBOX_FILE)
        self.sender = sender
        self.replies = []
        self.delivered = 0
        self._wake = asyncio.Event()
        self._load()

    def _load(self):
        try:
            replies = files.read_json(self.path, FILE_MAX)
            if replies is None:
                return
            self.replies = [r for r in replies if isinstance(r, dict) and "chat" in r and r.get("parts")]
        except (ValueError, TypeError) as exc:
            log("Telegram: {} is unreadable ({}); no replies are waiting".format(self.path, exc))
        if self.replies:
            count = len(self.replies)
            log("Telegram: {} {} waiting to be delivered".format(count, "reply is" if count == 1 else "replies are"))

    def _save(self):
        data = json.dumps(self.replies)
        while len(data) > FILE_MAX and len(self.replies) > 1:
            self._drop_oldest("the waiting replies are over {} bytes".format(FILE_MAX))
            data = json.dumps(self.replies)
        try:
            space.guarded(lambda: files.write_atomic(self.path, data), "replies waiting for Telegram", (self.path,))
        except OSError as exc:  # kept in RAM: they still go out unless the device restarts first
            log("Telegram: could not save the waiting replies ({})".format(exc))

    def _drop_oldest(self, why):
        dropped = self.replies.pop(0)
        log("Telegram: a reply to chat {} is given up ({}); it stays in the chat's history".format(
            dropped["chat"], why))

    def holds(self, chat_id):
        """True while a reply to this chat waits: a newer one queues behind it, so the order holds."""
        chat = str(chat_id)
        return any(reply["chat"] == chat for reply in self.replies)

    def add(self, chat_id, parts, cause=None):
        self.replies.append({"chat": str(chat_id), "parts": [list(part) for part in parts]})
        while len(self.replies) > REPLIES_MAX:
            self._drop_oldest("more than {} replies are waiting".format(REPLIES_MAX))
        self._save()
        if cause is not None:  # said once it is kept
            log("Telegram: reply to chat {} not delivered ({}); it is kept and sent once Telegram answers"
                  .format(chat_id, cause))
        self._wake.set()

    async def run(self):
        while True:
            if not self.replies:
                self._wake.clear()
                await self._wake.wait()
            try:
                sent = await self._send_oldest()
            except MemoryError as exc:
                memory_errors.short("Telegram outbox", exc)
                sent = False
            except Exception as exc:  # never let the task end: the replies would wait until a reboot
                log("Telegram: sending the waiting replies failed: {}: {}".format(exc.__class__.__name__, exc))
                sent = False
            if not sent:
                await asyncio.sleep(self.retry_s)

    async def _send_oldest(self):
        """Deliver the oldest waiting reply part by part; False when Telegram is still out of reach."""
        reply = self.replies[0]
        while reply["parts"]:
            html, plain = reply["parts"][0]
            try:
                await self.sender.deliver_part(reply["chat"], html, plain)
            except Undelivered:
                return False
            except TelegramError as exc:  # refused for good: the bot was blocked, the chat is gone
                log("Telegram: a waiting reply to chat {} was refused: {}".format(reply["chat"], exc))
                reply["parts"] = []
                break
            except Exception as exc:  # the answer was lost: it may have arrived, so it is not sent twice
                log("Telegram: a waiting reply to chat {} may not have arrived: {}".format(reply["chat"], exc))
            reply["parts"].pop(0)
            self._save()
        if self.replies and self.replies[0] is reply:  # (a burst of new ones may have pushed it out meanwhile)
            self.replies.pop(0)
        self.delivered += 1
        self._save()
        return True
