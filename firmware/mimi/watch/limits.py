# Watcher budgets (evaluations per minute, actions per hour, all watchers) and the registry check of their calls.
import json

from mimi import platform
from mimi.platform import const
from mimi.safety import NS

_MINUTE_MS = const(60000)
_HOUR_MS = const(3600000)
_CALLS_KEPT_MAX = const(8)  # acting calls of one watcher turn remembered for its report
_INPUT_SHOWN_MAX = const(120)  # characters of a tool input quoted in a report
_RESULT_SHOWN_MAX = const(160)


class Window:
    """Events in the last `span_ms`, as ticks_ms stamps; at most `most` are kept."""

    def __init__(self, span_ms, clock):
        self.span_ms = span_ms
        self.clock = clock
        self.stamps = []

    def count(self):
        now = self.clock()
        while self.stamps and platform.ticks_diff(now, self.stamps[0]) >= self.span_ms:
            self.stamps.pop(0)
        return len(self.stamps)

    def take(self, most):
        """Count one more event unless `most` are in the window already; True when counted."""
        if self.count() >= most:
            return False
        self.stamps.append(self.clock())
        return True


def _cut(text, limit):
    return text if len(text) <= limit else text[:limit] + "\u2026"


class Limits:
    """The two budgets; also a registry approver (refuses acting calls over the hourly cap) and a
    registry guard (remembers each watcher turn's acting calls, so they are always reported)."""

    def __init__(self, app, clock=None):
        self.app = app
        clock = clock or platform.ticks_ms
        self.evals = Window(_MINUTE_MS, clock)
        self.acts = Window(_HOUR_MS, clock)
        self.calls = {}  # watcher name -> [(tool, input text, outcome text, ok)] of its turn in progress
        self._evals_full = False
        self._owner_told = False

    def _cap(self, key):
        return self.app.config.get(NS, key)

    def may_evaluate(self, name):
        """Count an evaluation; False (and a console line once per full minute) when over the cap."""
        if self.evals.take(self._cap("watch_evals_min")):
            self._evals_full = False
            return True
        if not self._evals_full:
            self._evals_full = True
            platform.log("watch: {} evaluations this minute, the cap (safety_config.watch_evals_min); "
                  "{} and others wait for their next tick".format(self._cap("watch_evals_min"), name))
        return False

    def may_act(self, what):
        """Count an action; over the hourly cap it is refused and the owner is told (once per full hour)."""
        cap = self._cap("watch_acts_hour")
        if self.acts.take(cap):
            self._owner_told = False
            return True
        if not self._owner_told:
            self._owner_told = True
            self.app.owner.tell("watchers reached their cap of {} actions per hour ({} was refused); "
                                "more are refused until the hour is over (safety_config.watch_acts_hour)"
                                .format(cap, what))
        return False

    def refusal(self, name):
        return ("{} was not run: watchers may act {} times per hour and that is used up; the owner was told"
                .format(name, self._cap("watch_acts_hour")))

    # -- registry approver: async approve(name, data, tool, turn) -> refusal text or None --
    async def approve(self, name, data, tool, turn):
        from mimi.safety.breaker import is_acting

        watcher = turn.watcher
        if watcher is None or not is_acting(tool):
            return None
        if self.may_act("{} by watcher {}".format(name, watcher)):
            return None
        return self.refusal(name)

    # -- registry guard: before(...) -> None, after(...) records the outcome --
    def before(self, name, data, tool, turn):
        return None

    def after(self, name, data, text, is_error, took, turn):
        from mimi.safety.breaker import is_acting

        watcher = turn.watcher
        if watcher is None or not is_acting(self.app.registry.tools.get(name)):
            return
        kept = self.calls.setdefault(watcher, [])
        if len(kept) < _CALLS_KEPT_MAX:
            shown_input = _cut(json.dumps(data), _INPUT_SHOWN_MAX)
            kept.append((name, shown_input, _cut(str(text), _RESULT_SHOWN_MAX), not is_error))

    def take_calls(self, watcher):
        """The acting calls the watcher's turn made, forgotten here."""
        return self.calls.pop(watcher, [])


def report(calls):
    """Lines for the chat: what a watcher's turn did, done or not."""
    lines = []
    for name, shown_input, outcome, ok in calls:
        lines.append("- {} {}: {}".format(name, shown_input, "done" if ok else "NOT done: " + outcome))
    return "\n".join(lines)
