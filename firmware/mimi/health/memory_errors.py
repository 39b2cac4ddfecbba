# A MemoryError in a loop is never a reset by itself: collect, tell the console and the owner (once an hour per
# loop: memory_notice.py, loaded at the first one), carry on. short() is for a loop's own `except MemoryError`;
# lasting() runs a feature's loop again when one escapes it. Only a stuck agent or dispatcher resets the board
# (health/watchdog.py).
import asyncio

from mimi import platform
from mimi.platform import const

AGAIN_S = const(1)  # a loop that caught a MemoryError goes on after this pause (never a tight loop)
# Pre-made: what is said when even the notice finds no memory (no allocation needed to print it).
_BARE_LINE = "memory: a MemoryError was survived (too little memory left to say more)"
_owner = None  # the app's Owner (channels/owner.py), given at boot (use)


def use(owner):
    """Where the owner's notices go: the app's Owner (channels/owner.py), given at boot by app.py."""
    global _owner
    _owner = owner


def short(name, exc=None):
    """A MemoryError in the loop `name` was caught: collect, and tell the console and the owner, at most once an
    hour for this loop (memory_notice.py). True when told; never raises."""
    platform.collect()  # what the failed step held is garbage now: give it back first
    try:
        from mimi.health import memory_notice

        return memory_notice.tell(_owner, name, exc)
    except MemoryError:
        print(_BARE_LINE)  # bare print: not platform.log, whose note formats (allocates) a line
        if exc is not None:  # where it was raised, for the maintainer: printing it allocates nothing large
            try:
                platform.print_exception(exc)
            except MemoryError:
                pass
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
