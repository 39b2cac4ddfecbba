# What a survived MemoryError tells (health/memory_errors.py): a console line each time it is told, and a notice
# for the owner, at most once an hour per loop, the ones between counted. Loaded at the first MemoryError, kept.
from mimi import platform
from mimi.platform import const

QUIET_S = const(3600)  # after a notice, the same loop's next MemoryErrors are counted, told an hour on
NOTICE = "The device ran short of memory in its {} and carried on: nothing was restarted.{} " \
         "(This notice comes at most once an hour for each part.)"
_AGAIN = " It happened {} more times since the last notice."

told = {}  # loop name -> [ticks_ms of its last notice, MemoryErrors since then not told]


def tell(owner, name, exc):
    """Tell the console and the owner of a MemoryError in the loop `name`, unless told within QUIET_S: True when
    told. MemoryError passes (memory_errors.short prints its pre-made line then)."""
    now = platform.ticks_ms()
    seen = told.get(name)
    if seen is not None and platform.ticks_diff(now, seen[0]) < QUIET_S * 1000:
        seen[1] += 1
        return False
    missed = seen[1] if seen is not None else 0
    told[name] = [now, 0]
    free = platform.heap_info()[0]
    platform.log("memory: MemoryError in the {} ({}); collected{}; carrying on".format(
        name, exc if exc is not None else "no details", "" if free is None else ", {} bytes free".format(free)))
    if owner is not None:
        owner.tell(NOTICE.format(name, _AGAIN.format(missed) if missed else ""), True)
    return True
