# Telegram long polling: fetch updates, route them, and confirm each only once it has been answered.
import asyncio

from mimi import board, platform
from mimi.health import memory_errors
from mimi.net.backoff import Backoff
from mimi.net.http import HTTPError
from mimi.platform import const, log
from mimi.telegram.api import TelegramError

_POLL_TIMEOUT_S = const(30)  # how long Telegram holds a getUpdates open when there is nothing new
_POLL_GRACE_S = const(15)  # on top of that: a poll answered later than this is cut and retried
_POLL_LIMIT = const(5)  # updates per batch: a 100-update batch can be far over 100 KB of JSON
ALLOWED_UPDATES = ("message", "callback_query")
_BACKOFF_FIRST_S = const(1)
_BACKOFF_MAX_S = const(60)
_CONFLICT_WAIT_S = const(10)
_QUESTION_POLL_S = const(2)  # between polls while a turn waits for a button (Telegram answers those at once)
_EARLY_MAX = const(16)  # button presses handled ahead of a message left for later
SHORT_TRIES = const(3)  # polls an update is taken again after a MemoryError cut its handling, before giving up
_STATE_NS = "tg_state"
_OFFSET_KEY = "offset"


class Poller:
    """getUpdates in a loop. The offset sent to Telegram (which confirms everything below it) and the
    one saved in NVS only move past an update once the handler says it is answered, so a reboot
    neither replays answered messages nor loses unanswered ones.

    While a turn waits for a confirmation button, polling goes on with the offset held at the lowest
    unanswered update: button presses are routed at once, new messages queued while the agent's inbound
    queue has room (else left for later), and nothing unanswered is ever confirmed."""

    # As class attributes, so the host runner's --health option can shorten them for tests.
    poll_s = _POLL_TIMEOUT_S
    grace_s = _POLL_GRACE_S

    def __init__(self, api, handle_update, asking=None, has_room=None):
        self.api = api
        self.handle_update = handle_update  # async (update) -> True if answered now, False if queued
        self.asking = asking or (lambda: False)  # True while a question in Telegram waits for its button
        self.has_room = has_room or (lambda: True)  # the agent's inbound queue can take a message now
        self._nvs = platform.NVS(_STATE_NS)
        self.offset = self._load_offset()
        self._next_offset = self.offset  # where the batch being answered ends
        self._pending = []  # update ids handed to the agent and not yet answered
        self._early = []  # update ids handled ahead of an earlier one left for later
        self._short = [None, 0]  # the update a MemoryError cut, and how many times
        self._changed = asyncio.Event()  # the batch is answered, or a question opened
        self._wake = asyncio.Event()
        self.polls = 0
        self.gave_way = 0  # long polls cut for another TLS session (small-board mode)
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

    def question_opened(self):
        """A turn now waits for a button: poll for it even though the batch is unanswered."""
        self._changed.set()

    def answered(self, update_id):
        """The reply to this update was sent (or its failure reported)."""
        if update_id in self._pending:
            self._pending.remove(update_id)
        # Save at once how far everything is answered, so a reboot mid-batch does not answer this one again
        # (Telegram hears the new offset with the next getUpdates).
        low = min(self._pending) if self._pending else self._next_offset
        low = min(low, self._next_offset)  # never past an update that was held back, unanswered
        if low > self.offset:
            self.offset = low
            self._save_offset()
        if not self._pending:
            self._changed.set()

    async def _pause(self, seconds):
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _until_changed(self, seconds=None):
        try:
            await asyncio.wait_for(self._changed.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def run(self):
        backoff = None  # made at the first failure: a poller that polls holds none
        while True:
            if not self.api.has_token():
                self.last_error = "no bot token (set_tg_token <token>)"
                await self._pause(3600)
                continue
            questioning = False
            if self._pending:  # answer the current batch before confirming it
                self._changed.clear()
                if not self.asking():
                    await self._until_changed()
                    continue
                questioning = True
                self._hold()
            else:
                self._advance()
            try:
                updates = await self._get_updates(questioning)
                if updates is None:  # gave way to another TLS session; polls again in its turn
                    continue
                self.polls += 1
                self.last_error = None
                backoff = None
            except TelegramError as exc:
                self.last_error = exc.description
                backoff = backoff or Backoff(_BACKOFF_FIRST_S, _BACKOFF_MAX_S)
                wait = backoff.next()  # the backoff moves on whatever this failure waits
                if exc.code == 429:
                    wait = exc.retry_after or wait
                    log("Telegram: rate limited, waiting {} s".format(wait))
                elif exc.code == 409:
                    wait = max(wait, _CONFLICT_WAIT_S)
                    log("Telegram: {} (retrying in {} s)".format(exc.description, wait))
                elif exc.code == 401:
                    wait = _BACKOFF_MAX_S
                    log("Telegram: the bot token was refused (401); set it with set_tg_token <token>")
                else:
                    log("Telegram: getUpdates failed: {} (retrying in {} s)".format(exc, wait))
                await self._pause(wait)
                continue
            except (HTTPError, OSError, ValueError) as exc:
                self.last_error = str(exc)
                backoff = backoff or Backoff(_BACKOFF_FIRST_S, _BACKOFF_MAX_S)
                wait = backoff.next()
                log("Telegram: network error: {} (retrying in {} s)".format(exc, wait))
                await self._pause(wait)
                continue
            if questioning:
                await self._route_meanwhile(updates)
                await self._until_changed(_QUESTION_POLL_S)  # back to long polls once the batch is answered
            else:
                await self._route(updates)

    async def _get_updates(self, questioning):
        """One getUpdates. In small-board mode the long poll holds the board's one TLS session only until
        another call waits for it (net/tls_gate.py): then it is cut, unread (its updates come again with
        the same offset), and None returned."""
        params = {"offset": self.offset, "limit": _POLL_LIMIT, "timeout": 0 if questioning else self.poll_s,
                  "allowed_updates": list(ALLOWED_UPDATES)}
        if not board.small():
            return await self.api.call("getUpdates", params, self.poll_s + self.grace_s)
        cut = [False]

        def give_way():
            cut[0] = True
            call.cancel()

        call = asyncio.create_task(self.api.call("getUpdates", params, self.poll_s + self.grace_s, give_way=give_way))
        try:
            return await call
        except asyncio.CancelledError:
            if not cut[0]:  # this task itself is stopped
                call.cancel()
                raise
        self.gave_way += 1
        return None

    def _fresh(self, update):
        """The update's id when it was never handed over, else None."""
        update_id = update.get("update_id") if isinstance(update, dict) else None
        if not isinstance(update_id, int) or update_id < self._next_offset:
            return None  # malformed, confirmed already, or part of the batch being answered
        if update_id in self._pending or update_id in self._early:
            return None  # delivered twice: answered once
        return update_id

    async def _route(self, updates):
        if not isinstance(updates, list):
            return
        for update in updates:
            update_id = self._fresh(update)
            if update_id is not None and not await self._hand_over(update, update_id, True):
                return  # left unconfirmed, with those after it: the next poll brings them again

    async def _route_meanwhile(self, updates):
        """Route what arrives while a question waits: button presses at once, messages while there is room."""
        if not isinstance(updates, list):
            return
        held_back = False  # a message was left for later: nothing after it moves the offset
        for update in updates:
            update_id = self._fresh(update)
            if update_id is None:
                continue
            if "callback_query" not in update and (held_back or not self.has_room()):
                held_back = True
                continue
            if held_back:
                if len(self._early) >= _EARLY_MAX:
                    continue
                self._early.append(update_id)
            if not await self._hand_over(update, update_id, not held_back):
                return

    async def _hand_over(self, update, update_id, in_order):
        """Hand one update over; False when a MemoryError cut it short and it is left to come again."""
        self._pending.append(update_id)
        try:
            done = await self.handle_update(update)
        except MemoryError as exc:  # nothing was queued yet (the hand-over to the agent is its last step)
            memory_errors.short("telegram", exc)
            tries = self._short[1] + 1 if self._short[0] == update_id else 1
            self._short[:] = [update_id, tries]
            if tries < SHORT_TRIES:
                self._pending.remove(update_id)
                if update_id in self._early:
                    self._early.remove(update_id)
                await asyncio.sleep(memory_errors.AGAIN_S)
                return False
            log("Telegram: update {} given up after {} MemoryErrors".format(update_id, tries))
            done = True
        except Exception as exc:  # one bad update never stops polling
            log("Telegram: could not handle update {}: {}".format(update_id, exc))
            done = True
        if done:
            self.answered(update_id)
        if in_order and update_id + 1 > self._next_offset:
            self._next_offset = update_id + 1
        return True

    def _hold(self):
        # While a question waits: confirm only what lies below the oldest unanswered update.
        lowest = min(self._pending)
        if lowest > self.offset:
            self.offset = lowest
            self._save_offset()
        self._forget_early()

    def _advance(self):
        # Confirm the batch: the next getUpdates carries this offset, and a reboot starts from it.
        if self._next_offset > self.offset:
            self.offset = self._next_offset
            self._save_offset()
        self._forget_early()

    def _forget_early(self):
        self._early = [update_id for update_id in self._early if update_id >= self.offset]
