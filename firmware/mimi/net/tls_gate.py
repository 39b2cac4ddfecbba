# Small-board mode's one TLS session at a time: calls take turns; a standing long poll gives way and resumes.
import asyncio

from mimi import board


class Busy(OSError):
    """The session is in use and the caller chose not to wait behind it (a live draft: the final message
    follows)."""


class Gate:
    """Held from before a TLS connection opens until it closes, while board.small(): each mbedTLS session
    holds about 27 KB of the chip's SRAM while it reads (BENCHMARKS.md). Waiters are served in turn; a
    holder that gave `give_way` (Telegram's long poll) is told when someone else begins to wait."""

    def __init__(self):
        self._lock = None  # made at the first session taken in the mode
        self._give_way = None  # the holder's callback, or None
        self._queued = 0  # callers waiting their turn
        self.waited = 0  # calls that had to wait their turn (tests)
        self.cuts = 0  # standing sessions told to give way

    async def take(self, give_way=None, wait=True):
        """Hold the session: True once held (release() after), False when the mode is off (nothing held).
        wait=False: Busy rather than waiting behind a call (only a standing long poll is cut for it)."""
        if not board.small():
            return False
        self.prepare()
        if self._lock.locked():
            if not wait and (self._give_way is None or self._queued):
                raise Busy("the board's one TLS session is in use")
            self.waited += 1
            self.cut_standing()
        self._queued += 1
        try:
            await self._lock.acquire()
            while give_way is not None and self._queued > 1:  # came while it waited its turn, so never told:
                self._lock.release()  # a standing session lets them go first
                await self._lock.acquire()
        finally:
            self._queued -= 1
        self._give_way = give_way
        return True

    def prepare(self):
        """Make the lock now (at boot in the mode): MicroPython's asyncio imports Lock's module at its first
        use, which a first session under memory pressure could not afford."""
        if self._lock is None:
            self._lock = asyncio.Lock()

    def cut_standing(self):
        """Tell a standing holder (a long poll) to give way now; it takes its turn again after."""
        give_way, self._give_way = self._give_way, None
        if give_way is not None:
            self.cuts += 1
            give_way()

    def release(self):
        self._give_way = None
        if self._lock is not None and self._lock.locked():
            self._lock.release()

    def busy(self):
        return self._lock is not None and self._lock.locked()


gate = Gate()
