# get_current_time: the board's UTC clock as ISO text and Unix time.
from mimi import platform
from mimi.platform import const

_CLOCK_SET_AFTER = const(1704067200)  # 2024-01-01: an earlier time means the clock was never set
_DAY_S = const(86400)
_WEEKDAYS = ("Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday")  # from 1970-01-01


def iso_utc(unix):
    """'YYYY-MM-DDTHH:MM:SSZ' for a Unix time."""
    seconds = unix % _DAY_S
    return "{}T{:02d}:{:02d}:{:02d}Z".format(
        platform.utc_date(unix), seconds // 3600, seconds % 3600 // 60, seconds % 60)


def weekday(unix):
    """English weekday name of a Unix time (UTC)."""
    return _WEEKDAYS[(unix // _DAY_S) % 7]


name = "get_current_time"
tier, acting, level = "observer", False, "autonomous"  # [safety] anyone may ask; it only reads
description = (
    "Get the current date and time in UTC (ISO 8601 and Unix seconds) from the board's clock. "
    "Convert to the owner's timezone yourself (USER.md may say which)."
)
schema = {"type": "object", "properties": {}, "required": []}


def run(input):
    now = platform.unix_time()
    result = {
        "utc": iso_utc(now),
        "unix": now,
        "weekday": weekday(now),
        "timezone": "UTC",
    }
    if now < _CLOCK_SET_AFTER:
        result["warning"] = ("the clock has not been set yet (it is set over the network once WiFi "
                             "is up): this time is wrong")
    else:
        result["source"] = "board clock, set over the network (NTP)"
    return result
