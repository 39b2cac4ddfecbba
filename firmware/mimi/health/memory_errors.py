# A MemoryError in a loop is never a reset by itself: collect, tell the console and the owner (once an hour per
# loop), carry on. short() is for a loop's own `except MemoryError`; lasting() runs a service's loop again when
# one escapes it. Only a stuck agent or dispatcher resets the board (health/watchdog.py).
import asyncio

from mimi import platform
from mimi.platform import const

QUIET_S = const(3600)  # after a notice, the same loop's next MemoryErrors are counted, told an hour on
AGAIN_S = const(1)  # a loop that caught a MemoryError goes on after this pause (never a tight loop)
# Pre-made: what is said when even the notice finds no memory (no allocation needed to print it).
_BARE_LINE = "memory: a MemoryError was survived (too little memory left to say more)"
NOTICE = "The device ran short of memory in its {} and carried on: nothing was restarted.{} " \
         "(This notice comes at most once an hour for each part.)"
_AGAIN = " It happened {} more times since the last notice."

_state = {"owner": None}  # the app's Owner (channels/owner.py), given at boot (use)
_told = {}  # loop name -> [ticks_ms of its last notice, MemoryErrors since then not told]


def use(owner):
    """Where the owner's notices go: the app's Owner (channels/owner.py), given at boot by app.py."""
    _state["owner"] = owner


def short(name, exc=None):
    """A MemoryError in the loop `name` was caught: collect, and tell the console and the owner, at most once an
    hour for this loop (the times between are counted and said in the next notice). Never raises."""
    platform.collect()  # what the failed step held is garbage now: give it back first
    try:
        now = platform.ticks_ms()
        seen = _told.get(name)
        if seen is not None and platform.ticks_diff(now, seen[0]) < QUIET_S * 1000:
            seen[1] += 1
            return False
        missed = seen[1] if seen is not None else 0
        _told[name] = [now, 0]
        free = platform.heap_info()[0]
        print("memory: MemoryError in the {} ({}); collected{}; carrying on".format(
            name, exc if exc is not None else "no details",
            "" if free is None else ", {} bytes free".format(free)))
        owner = _state["owner"]
        if owner is not None:
            owner.tell(NOTICE.format(name, _AGAIN.format(missed) if missed else ""), True)
        return True
    except MemoryError:
        print(_BARE_LINE)
        return False


async def lasting(name, run, *args):
    """Run the loop `run(*args)` for good: when a MemoryError ends it, short() says so and it starts again (its
    object's state kept). Returns what run returns when it ends by itself; other exceptions pass."""
    while True:
        try:
            return await run(*args)
        except MemoryError as exc:
            short(name, exc)
        await asyncio.sleep(AGAIN_S)
