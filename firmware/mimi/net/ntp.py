# The clock from NTP: set once the link is up (TLS certificate checks need the date), retried
# with backoff, then refreshed every few hours; https waits for it (see http.request).
import asyncio

from mimi import platform
from mimi.net.backoff import Backoff
from mimi.platform import const
from mimi.health import memory_errors

RETRY_FIRST_S = const(2)
RETRY_MAX_S = const(300)
_RESYNC_S = const(21600)  # 6 h: the RTC drifts by seconds a day
NOT_SET_TEXT = ("the clock is not set yet (waiting for the time from NTP), so {}'s certificate "
                "cannot be checked; try again in a moment")

_state = {"synced": False, "last_ok": None, "error": None, "next_ms": None}


def synced():
    """True once the clock was set from NTP (it stays set when a later refresh fails)."""
    return _state["synced"]


def sync():
    """Ask NTP once and set the RTC (blocks up to ntptime.timeout s); True once set."""
    try:
        import ntptime

        ntptime.settime()
    except Exception as exc:  # timeouts, DNS failures, short answers: all mean "not this time"
        _state["error"] = _reason(exc)
        return False
    _state["synced"] = True
    _state["last_ok"] = platform.unix_time()
    _state["error"] = None
    return True


def _reason(exc):
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if code == 110:
        return "no answer from the time server"
    if code is not None and code < 0:
        return "time server name not found"
    return str(exc) or exc.__class__.__name__


def sync_and_report(retry_s=None):
    ok = sync()
    if ok:
        platform.log("clock: set from NTP: {}".format(platform.utc_stamp()))
    elif retry_s is not None:
        platform.log("clock: NTP failed ({}); https waits for the clock; next try in {} s".format(
            _state["error"], retry_s))
    return ok


async def keep(is_up, backoff=None):
    """Retry until the clock is set, then refresh every _RESYNC_S; the first try is the caller's."""
    backoff = backoff or Backoff(RETRY_FIRST_S, RETRY_MAX_S)
    wait = backoff.next() if not synced() else _RESYNC_S
    while True:
        try:
            _state["next_ms"] = platform.ticks_add(platform.ticks_ms(), int(wait * 1000))
            await asyncio.sleep(wait)
            if not is_up():
                continue  # try again once the link is back, at the same pace
            if sync():
                platform.log("clock: set from NTP: {}".format(platform.utc_stamp()))
                backoff.reset()
                wait = _RESYNC_S
            else:
                wait = backoff.next()
                platform.log("clock: NTP failed ({}); next try in {} s".format(_state["error"], wait))
        except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
            memory_errors.short("clock", exc)
            await asyncio.sleep(memory_errors.AGAIN_S)


def summary():
    """One line for status/wifi_status."""
    if _state["synced"]:
        return "clock synced (NTP, {})".format(platform.utc_stamp(_state["last_ok"]))
    text = "clock not set yet"
    if _state["error"]:
        text += " (NTP: {}".format(_state["error"])
        if _state["next_ms"] is not None:
            left = max(0, platform.ticks_diff(_state["next_ms"], platform.ticks_ms())) // 1000
            text += "; next try in {} s".format(left)
        text += ")"
    return text


def _reset():
    """Tests only: as at power-on, never synced."""
    _state.update({"synced": False, "last_ok": None, "error": None, "next_ms": None})
