# Circuit breaker: the same acting tool call repeated too often in a window is refused until things go quiet.
import json

from mimi import platform
from mimi.platform import const

try:
    from hashlib import sha256
except ImportError:  # a build without hashlib: the key is the canonical text itself
    sha256 = None

NS = "safety_config"
_KEYS_MAX = const(32)  # distinct calls remembered; the least recently seen is forgotten first
_MS_PER_S = const(1000)
_DEPTH_MAX = const(16)

# Built-in tools that change the world; a user tool says so itself with `acting = True`.
ACTING = ("write_file", "edit_file", "gpio_write", "cron_add", "cron_remove", "send_message", "remember",
          "note_today")


def is_acting(name, tool=None):
    return name in ACTING or bool(getattr(tool, "acting", False))


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


class Breaker:
    """Registry guard: before() refuses an open call; the limits are read from safety_config each time."""

    def __init__(self, config, clock=None, tell=print):
        self.config = config
        self.clock = clock or platform.ticks_ms  # milliseconds, compared with ticks_diff
        self.tell = tell  # how the owner hears that a breaker opened
        self.calls = {}  # key -> [recent start times (ms), last seen (ms), open]

    def _settings(self):
        get = self.config.get
        return get(NS, "calls"), get(NS, "window_s"), get(NS, "quiet_s")

    def _forget_oldest(self, now):
        oldest = None
        for key, entry in self.calls.items():
            if oldest is None or platform.ticks_diff(now, entry[1]) > platform.ticks_diff(now, self.calls[oldest][1]):
                oldest = key
        del self.calls[oldest]

    def before(self, name, data, tool=None):
        """None to let the call go on to the approvers, else the reason it is refused. Nothing is counted
        here: a call the roles or the user refuse never ran, so it cannot open a breaker."""
        return self._check(name, data, tool, False)

    def admit(self, name, data, tool=None):
        """The approvers let the call through: count it (checked again, as identical calls may have
        been approved meanwhile)."""
        return self._check(name, data, tool, True)

    def _check(self, name, data, tool, count):
        if not is_acting(name, tool):
            return None
        limit, window_s, quiet_s = self._settings()
        now = self.clock()
        key = call_key(name, data)
        entry = self.calls.get(key)
        if entry is not None and entry[2] and platform.ticks_diff(now, entry[1]) >= quiet_s * _MS_PER_S:
            entry = None  # quiet long enough: the breaker closes and counting starts afresh
            del self.calls[key]
        if entry is None:
            if not count:
                return None
            if len(self.calls) >= _KEYS_MAX:
                self._forget_oldest(now)
            entry = [[], now, False]
            self.calls[key] = entry
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
            self.tell("safety: circuit breaker opened for {}: the same call ran {} times in {} minutes; "
                      "further identical calls are refused until {} quiet minutes".format(
                          name, limit, _minutes(window_s), _minutes(quiet_s)))
        return ("circuit breaker open for {}: the same call ran {} times in {} minutes; "
                "it closes after {} quiet minutes".format(name, limit, _minutes(window_s), _minutes(quiet_s)))

    def after(self, name, data, text, is_error, took_ms):
        return None


def _minutes(seconds):
    return seconds // 60 if seconds % 60 == 0 else round(seconds / 60, 1)


def setup(app):
    """Create the breaker and put it in front of every tool call the registry runs."""
    breaker = Breaker(app.config, tell=app.owner.tell)
    app.registry.guards.append(breaker)
    return breaker
