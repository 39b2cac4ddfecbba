# Which board this is: the small-board mode (no PSRAM), chosen at boot from the heap or by system.small_board.
from mimi import platform
from mimi.platform import const

# A heap (gc.mem_free() + gc.mem_alloc(), and what the chip's split heap can still grow into: ESP-IDF's free
# data heap) under this is a board without PSRAM: an ESP32-S3's 512 KB of SRAM leaves MicroPython far less
# (BENCHMARKS.md, the board table); a board with PSRAM has 2 MB or more.
_SMALL_HEAP = const(512 * 1024)
ON, OFF, AUTO = "on", "off", "auto"
NS, KEY = "system", "small_board"
# What the mode changes, as `status` says it.
EFFECTS = "one TLS session at a time, CA certificates parsed per host, Claude's web search off unless chosen"

_state = [False, None, AUTO]  # in the mode; the heap seen at boot (None: not measured); the setting


def heap_total():
    """The GC heap's size now (free + allocated) and the room it can grow into (MicroPython on the ESP32 starts
    its heap at 64 KB and adds areas on demand), or None where the runtime does not say (CPython)."""
    free, used = platform.heap_info()
    return None if free is None else free + used + platform.heap_room()


def small():
    """True in small-board mode: the TLS gate, the per-host CA certificates and the web search default follow."""
    return _state[0]


def choose(config, heap=None):
    """Set the mode from system.small_board: on, off, or auto (the heap seen at boot under _SMALL_HEAP).
    `heap`: the heap at boot (measured at the first call when None). Returns small()."""
    if heap is not None or _state[1] is None:
        _state[1] = heap_total() if heap is None else heap
    setting = config.get(NS, KEY) or AUTO
    _state[2] = setting
    if setting == AUTO:
        _state[0] = _state[1] is not None and _state[1] < _SMALL_HEAP
    else:
        _state[0] = setting == ON
    return _state[0]


def follow(config, when_small=None):
    """Choose now and again after every change of system.small_board (config_set applies at once): small().
    when_small() runs each time the mode is chosen on (at boot, or switched on later)."""

    def changed(ns, key):
        if ns == NS and key == KEY and choose(config) and when_small:
            when_small()

    config.subscribe(changed)
    small_now = choose(config)
    if small_now and when_small:
        when_small()
    return small_now


def describe():
    """The status line's text: the mode, why, and what it changes."""
    heap = _state[1]
    seen = "heap not measured" if heap is None else "heap {} KB".format(heap // 1024)
    if _state[2] == AUTO:
        why = "{}, {} 512 KB; auto".format(seen, "under" if _state[0] else "not under")
    else:
        why = "{}; set {}".format(seen, _state[2])
    if _state[0]:
        return "small ({}): {}".format(why, EFFECTS)
    return "roomy ({})".format(why)
