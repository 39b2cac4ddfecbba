# Telegram long polling: fetch updates, route them, and confirm each only once it has been answered.
import asyncio

from mimi import platform
from mimi.net.http import HTTPError
from mimi.platform import const
from mimi.telegram.api import TelegramError

POLL_TIMEOUT_S = const(30)
POLL_LIMIT = const(5)  # updates per batch: a 100-update batch can be far over 100 KB of JSON
ALLOWED_UPDATES = ("message",)
BACKOFF_FIRST_S = const(1)
BACKOFF_MAX_S = const(60)
CONFLICT_WAIT_S = const(10)
_STATE_NS = "tg_state"
_OFFSET_KEY = "offset"


class Poller:
    """getUpdates in a loop. The offset sent to Telegram (which confirms everything below it) and the
    one saved in NVS only move past an update once the handler says it is answered, so a reboot
    neither replays answered messages nor loses unanswered ones."""

    def __init__(self, api, handle_update):
        self.api = api
        self.handle_update = handle_update  # async (update) -> True if answered now, False if queued
        self._nvs = platform.NVS(_STATE_NS)
        self.offset = self._load_offset()
        self._next_offset = self.offset  # where the batch being answered ends
        self._pending = []  # update ids handed to the agent and not yet answered
        self._settled = asyncio.Event()
        self._wake = asyncio.Event()
        self.polls = 0
        self.last_error = None

    def _load_offset(self):
        try:
            return self._nvs.get_i32(_OFFSET_KEY)
        except OSError:
            return 0

    def _save_offset(self):
        self._nvs.set_i32(_OFFSET_KEY, self.offset)
        self._nvs.commit()

    def wake(self):
        """A setting changed (token, endpoint): stop waiting and poll again."""
        self._wake.set()

    def answered(self, update_id):
        """The reply to this update was sent (or its failure reported)."""
        if update_id in self._pending:
            self._pending.remove(update_id)
        if not self._pending:
            self._settled.set()

    async def _pause(self, seconds):
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def run(self):
        backoff = BACKOFF_FIRST_S
        while True:
            if not self.api.has_token():
                self.last_error = "no bot token (set_tg_token <token>)"
                await self._pause(3600)
                continue
            if self._pending:  # answer the current batch before confirming it
                self._settled.clear()
                await self._settled.wait()
            self._advance()
            try:
                updates = await self.api.call(
                    "getUpdates",
                    {"offset": self.offset, "limit": POLL_LIMIT, "timeout": POLL_TIMEOUT_S,
                     "allowed_updates": list(ALLOWED_UPDATES)},
                    POLL_TIMEOUT_S + 15,
                )
                self.polls += 1
                self.last_error = None
                backoff = BACKOFF_FIRST_S
            except TelegramError as exc:
                self.last_error = exc.description
                if exc.code == 429:
                    wait = exc.retry_after or backoff
                    print("Telegram: rate limited, waiting {} s".format(wait))
                elif exc.code == 409:
                    wait = max(backoff, CONFLICT_WAIT_S)
                    print("Telegram: {} (retrying in {} s)".format(exc.description, wait))
                elif exc.code == 401:
                    wait = BACKOFF_MAX_S
                    print("Telegram: the bot token was refused (401); set it with set_tg_token <token>")
                else:
                    wait = backoff
                    print("Telegram: getUpdates failed: {} (retrying in {} s)".format(exc, wait))
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                await self._pause(wait)
                continue
            except (HTTPError, OSError, ValueError) as exc:
                self.last_error = str(exc)
                print("Telegram: network error: {} (retrying in {} s)".format(exc, backoff))
                await self._pause(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            await self._route(updates)

    async def _route(self, updates):
        if not isinstance(updates, list):
            return
        for update in updates:
            update_id = update.get("update_id") if isinstance(update, dict) else None
            if not isinstance(update_id, int) or update_id < self.offset:
                continue  # malformed, or a duplicate of one already confirmed
            if update_id in self._pending:
                continue  # delivered twice: answered once
            self._pending.append(update_id)
            try:
                done = await self.handle_update(update)
            except Exception as exc:  # one bad update never stops polling
                print("Telegram: could not handle update {}: {}".format(update_id, exc))
                done = True
            if done:
                self.answered(update_id)
            if update_id + 1 > self._next_offset:
                self._next_offset = update_id + 1

    def _advance(self):
        # Confirm the batch: the next getUpdates carries this offset, and a reboot starts from it.
        if self._next_offset > self.offset:
            self.offset = self._next_offset
            self._save_offset()
