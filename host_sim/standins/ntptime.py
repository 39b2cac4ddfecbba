# Laptop stand-in for micropython-lib's ntptime: the laptop's clock is right already, so settime()
# sets nothing and succeeds. A test makes it fail like an unreachable NTP server: the next N calls
# (MIMI_SIM_NTP_FAILS=N in the environment, or fail_next(N); -1: every call) raise
# OSError(ETIMEDOUT), as the real module does when no answer comes within `timeout` seconds.
import os
import time as _time

FAILS_ENV = "MIMI_SIM_NTP_FAILS"
_ETIMEDOUT = 110
_NTP_DELTA = 2208988800  # seconds from 1900-01-01 (NTP) to 1970-01-01 (Unix)

host = "pool.ntp.org"
timeout = 1


def _env_fails():
    try:
        return int(os.getenv(FAILS_ENV) or 0)
    except ValueError:
        return 0


_state = {"fails": _env_fails(), "calls": 0, "set": 0}


def fail_next(count):
    """Host only: the next `count` calls fail (-1: all of them, 0: none)."""
    _state["fails"] = count


def calls():
    """Host only: (settime/time calls so far, successful settime calls)."""
    return _state["calls"], _state["set"]


def _answer():
    _state["calls"] += 1
    if _state["fails"]:
        if _state["fails"] > 0:
            _state["fails"] -= 1
        raise OSError(_ETIMEDOUT, "ETIMEDOUT")


def time():
    """Seconds since 1970 from the server (the chip's module counts from its own epoch)."""
    _answer()
    return int(_time.time())


def settime():
    _answer()
    _state["set"] += 1
