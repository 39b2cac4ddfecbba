# The fake Telegram's scripted faults: what a test asks the next calls to do wrong, as the real Bot API and
# its proxy do (an error answer, 409 for a second poller, a cut or truncated answer, a held or slow one).
from collections import deque

from host_sim.telegram_params import ApiError

TERMINATED = ("Conflict: terminated by other getUpdates request; make sure that only one bot "
              "instance is running")
DEFAULT_DESCRIPTIONS = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden: bot was blocked by the user",
    404: "Not Found", 409: TERMINATED, 500: "Internal Server Error",
}


class ScriptedFaults:
    """Mixed into FakeTelegram, which owns the state these write: _lock, _faults and _slow ({method in lower
    case: deque}), _held (the getUpdates being held), _world, and _wake()."""

    # thread-safe; method names as in the API, e.g. "sendMessage"

    def _script(self, method, fault, times=1):
        with self._lock:
            self._faults.setdefault(method.lower(), deque()).extend([fault] * times)

    def fail_next(self, method, status, description=None, retry_after=None, times=1):
        """The next `times` calls of method answer this error (502/504: the proxy's HTML)."""
        if status == 429 and retry_after is None:
            retry_after = 5
        if description is None:
            description = ("Too Many Requests: retry after {}".format(retry_after)
                           if status == 429 else DEFAULT_DESCRIPTIONS.get(status, "Error"))
        self._script(method, {"kind": "fail", "error": ApiError(status, description,
                                                                 retry_after)}, times)

    def conflict_second_poller(self):
        """Another bot instance polls: the held getUpdates (or else the next one) gets 409."""
        with self._lock:
            if self._held is not None:
                self._held["superseded"] = True
            else:
                self._faults.setdefault("getupdates", deque()).append(
                    {"kind": "fail", "error": ApiError(409, TERMINATED)})
        self._wake()

    def reset_connection_next(self, method, before=False):
        """Close the TCP connection mid-response (after the call took effect unless before)."""
        self._script(method, {"kind": "reset", "before": before})

    def malformed_next(self, method):
        """Answer the next call (which takes effect) with a 200 and a truncated JSON body."""
        self._script(method, {"kind": "malformed"})

    def duplicate_next_update(self):
        """The next update delivered is delivered again in the following getUpdates answer."""
        with self._lock:
            self._world.duplicate_next = True

    def hold_answer_next(self, method, seconds):
        """The next call of method takes effect, but its answer is held `seconds` (the call is marked
        "held" in calls meanwhile): the user sees the message, the bot has not heard that it went out."""
        self._script(method, {"kind": "hold", "seconds": seconds})

    def slow_next(self, method, seconds):
        """Wait `seconds` before handling the next call of method."""
        with self._lock:
            self._slow.setdefault(method.lower(), deque()).append(seconds)
