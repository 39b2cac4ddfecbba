# Counting identical acting tool calls and opening a breaker (imported at the first acting tool call).
import json

from mimi import platform
from mimi.platform import const
from mimi.safety.breaker import NS

try:
    from hashlib import sha256
except ImportError:  # a build without hashlib: the key is the canonical text itself
    sha256 = None

_KEYS_MAX = const(32)  # distinct calls remembered; the least recently seen is forgotten first
_MS_PER_S = const(1000)
_DEPTH_MAX = const(16)


def _feed(value, put, depth=0):
    """Write value as canonical JSON (object keys sorted) through put(text), piece by piece."""
    if depth > _DEPTH_MAX:
        raise ValueError("tool input is nested too deeply")
    if isinstance(value, dict):
        put("{")
        first = True
        for key in sorted(value):
            put("{}{}:".format("" if first else ",", json.dumps(str(key))))
            _feed(value[key], put, depth + 1)
            first = False
        put("}")
    elif isinstance(value, (list, tuple)):
        put("[")
        for i, item in enumerate(value):
            if i:
                put(",")
            _feed(item, put, depth + 1)
        put("]")
    else:
        put(json.dumps(value))


def canonical(value):
    """Canonical JSON text of a value: equal inputs give equal text whatever their key order."""
    parts = []
    _feed(value, parts.append)
    return "".join(parts)


def call_key(name, data):
    """A short key for (tool, input): the SHA-256 of the canonical text, streamed into the hash."""
    if sha256 is None:
        return name + "\n" + canonical(data)
    digest = sha256(name.encode() + b"\n")
    _feed(data, lambda text: digest.update(text.encode()))
    return digest.digest()


def _forget_oldest(calls, now):
    oldest = None
    for key, entry in calls.items():
        if oldest is None or platform.ticks_diff(now, entry[1]) > platform.ticks_diff(now, calls[oldest][1]):
            oldest = key
    del calls[oldest]


def check(breaker, name, data, count):
    """Breaker.before (count False) and admit (count True) for an acting tool: None, or why it is refused.
    The limits are read from safety_config each time."""
    get = breaker.config.get
    limit, window_s, quiet_s = get(NS, "calls"), get(NS, "window_s"), get(NS, "quiet_s")
    calls = breaker.calls  # key -> [recent start times (ms), last seen (ms), open]
    now = breaker.clock()
    key = call_key(name, data)
    entry = calls.get(key)
    if entry is not None and entry[2] and platform.ticks_diff(now, entry[1]) >= quiet_s * _MS_PER_S:
        entry = None  # quiet long enough: the breaker closes and counting starts afresh
        del calls[key]
    if entry is None:
        if not count:
            return None
        if len(calls) >= _KEYS_MAX:
            _forget_oldest(calls, now)
        entry = [[], now, False]
        calls[key] = entry
    entry[1] = now  # an attempt while open keeps it open
    if not entry[2]:
        window_ms = window_s * _MS_PER_S
        entry[0] = [t for t in entry[0] if platform.ticks_diff(now, t) < window_ms]
        if len(entry[0]) < limit:
            if count:
                entry[0].append(now)
            return None
        entry[0] = []
        entry[2] = True
        breaker.tell("safety: circuit breaker opened for {}: the same call ran {} times in {} minutes; "
                     "further identical calls are refused until {} quiet minutes".format(
                         name, limit, _minutes(window_s), _minutes(quiet_s)))
    return ("circuit breaker open for {}: the same call ran {} times in {} minutes; "
            "it closes after {} quiet minutes".format(name, limit, _minutes(window_s), _minutes(quiet_s)))


def _minutes(seconds):
    return seconds // 60 if seconds % 60 == 0 else round(seconds / 60, 1)
