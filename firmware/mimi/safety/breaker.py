# Circuit breaker: the same acting tool call repeated too often in a window is refused until things go quiet.
from mimi import platform
from mimi.platform import const
from mimi.safety import NS

_KEYS_MAX = const(32)  # distinct calls remembered; the least recently seen is forgotten first
_MS_PER_S = const(1000)


def is_acting(tool):
    """Does the tool change the world: its own `acting` fact (builtin_defs.DEFS for a built-in, filled in by
    tools/tool_check.py for any other); an unknown tool does nothing."""
    return tool is not None and tool.acting


class Breaker:
    """Registry guard: before() refuses an open call. Only acting tools are counted, under a key of the call
    (safety/call_key.py, imported at the first acting call: a read-only call loads none of it)."""

    def __init__(self, config, clock=None, tell=print):
        self.config = config
        self.clock = clock or platform.ticks_ms  # milliseconds, compared with ticks_diff
        self.tell = tell  # how the owner hears that a breaker opened
        self.calls = {}  # key -> [recent start times (ms), last seen (ms), open]

    def before(self, name, data, tool, turn):
        """None to let the call go on to the approvers, else the reason it is refused. Nothing is counted
        here: a call the roles or the user refuse never ran, so it cannot open a breaker."""
        return self._check(name, data, False) if is_acting(tool) else None

    def admit(self, name, data, tool, turn):
        """The approvers let the call through: count it (checked again, as identical calls may have
        been approved meanwhile)."""
        return self._check(name, data, True) if is_acting(tool) else None

    def after(self, name, data, text, is_error, took_ms, turn):
        return None

    def _check(self, name, data, count):
        """None, or why the call is refused; counted when `count`. The limits are read from safety_config
        each time."""
        from mimi.safety.call_key import call_key

        get = self.config.get
        limit, window_s, quiet_s = get(NS, "calls"), get(NS, "window_s"), get(NS, "quiet_s")
        calls, now, key = self.calls, self.clock(), call_key(name, data)
        entry = calls.get(key)
        if entry is not None and entry[2] and platform.ticks_diff(now, entry[1]) >= quiet_s * _MS_PER_S:
            entry = None  # quiet long enough: the breaker closes and counting starts afresh
            del calls[key]
        if entry is None:
            if not count:
                return None
            if len(calls) >= _KEYS_MAX:
                self._forget_oldest(now)
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
            self.tell("safety: circuit breaker opened for {}: the same call ran {} times in {} minutes; "
                      "further identical calls are refused until {} quiet minutes".format(
                          name, limit, _minutes(window_s), _minutes(quiet_s)))
        return ("circuit breaker open for {}: the same call ran {} times in {} minutes; "
                "it closes after {} quiet minutes".format(name, limit, _minutes(window_s), _minutes(quiet_s)))

    def _forget_oldest(self, now):
        calls, oldest = self.calls, None
        for key, entry in calls.items():
            if oldest is None or platform.ticks_diff(now, entry[1]) > platform.ticks_diff(now, calls[oldest][1]):
                oldest = key
        del calls[oldest]


def _minutes(seconds):
    return seconds // 60 if seconds % 60 == 0 else round(seconds / 60, 1)


def setup(app):
    """Create the breaker and put it in front of every tool call the registry runs."""
    breaker = Breaker(app.config, tell=app.owner.tell)
    app.registry.guards.append(breaker)
    return breaker
