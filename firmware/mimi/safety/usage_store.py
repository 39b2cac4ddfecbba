# Tokens used per model today and this month, kept in a small JSON file (costs: usage_report.py). A model of
# a profile other than claude is counted as "<profile> <model>" (safety/budget.py).
import json

from mimi import platform
from mimi.platform import const
from mimi.storage import files
from mimi.storage.layout import check_date

FILE_NAME = "usage.json"
FILE_MAX = const(6144)  # bytes of the file read back; a longer one is treated as corrupt
DAYS_KEPT = const(30)  # past days whose [tokens, estimated micro-USD] are kept (the web app's usage chart)
MODELS_MAX = const(8)  # models counted per period, OTHER included; the rest are added up under OTHER
MODEL_NAME_MAX = const(64)
OTHER = "(other models)"
_SAVE_EVERY_S = const(60)  # the file is written at most this often (plus at thresholds and day change)
_MARKS_MAX = const(8)
# The usage fields of a Messages API reply, in the order a model's counts are kept.
# The fifth, Claude's server web searches (usage.server_tool_use), is a count, never added to the tokens; the
# sixth counts the replies whose tokens were estimated from their characters (a server that reports no usage).
FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
          "web_search_requests", "estimated_replies")
TOKEN_FIELDS = const(4)
_ESTIMATED_AT = const(5)
# Speech services: [seconds of voice notes transcribed, characters spoken] today and this month.
_VOICE_FIELDS = const(2)
# The RTC counts from 2000-01-01 until NTP sets it (net/ntp.py): an earlier date than this means "not set".
CLOCK_SET_AFTER = 1735689600  # 2025-01-01 00:00 UTC


def clock_date(now):
    """Today's 'YYYY-MM-DD' (UTC), or None while the clock is not set."""
    return platform.utc_date(now) if now >= CLOCK_SET_AFTER else None


def _counts(table):
    if not isinstance(table, dict) or len(table) > MODELS_MAX:
        raise ValueError("bad model table")
    out = {}
    for model in table:
        row = table[model]
        if not isinstance(model, str) or not isinstance(row, list) or not TOKEN_FIELDS <= len(row) <= len(FIELDS):
            raise ValueError("bad counts")
        row = row + [0] * (_ESTIMATED_AT - len(row))  # a file written before web searches were counted
        for n in row:
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ValueError("bad count")
        out[model] = list(row)
    return out


def _voice(counts):
    """A period's voice counts; [0, 0] for a file written before they were counted."""
    counts = [0] * _VOICE_FIELDS if counts is None else counts
    if not isinstance(counts, list) or len(counts) != _VOICE_FIELDS:
        raise ValueError("bad voice counts")
    for n in counts:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError("bad voice count")
    return list(counts)


def _marks(marks):
    if not isinstance(marks, dict) or len(marks) > _MARKS_MAX:
        raise ValueError("bad marks")
    for key in marks:
        if not isinstance(key, str) or not isinstance(marks[key], int):
            raise ValueError("bad mark")
    return dict(marks)


def _days(days):
    if not isinstance(days, dict) or len(days) > DAYS_KEPT + 1:
        raise ValueError("bad days")
    for day in days:
        check_date(day)
        row = days[day]
        if not isinstance(row, list) or len(row) != 2 or not isinstance(row[0], int) \
                or not (row[1] is None or isinstance(row[1], int)):
            raise ValueError("bad day")
    return dict(days)


def total(table):
    """Every token of a period, all kinds and models counted (web searches are not tokens)."""
    return sum(sum(row[:TOKEN_FIELDS]) for row in table.values())


def searches(table):
    """Claude's server web searches of a period, all models."""
    return sum(row[TOKEN_FIELDS] for row in table.values() if len(row) > TOKEN_FIELDS)


def estimated(counts):
    """How many of a model's replies had their tokens estimated from their characters."""
    return counts[_ESTIMATED_AT] if len(counts) > _ESTIMATED_AT else 0


class UsageStore:
    """Counts per model for `day` and its month; `marks` hold the budget's notices sent today.

    While the clock is not set the day does not turn: counts go on into the last known day (so a
    power cycle cannot reset the budget), or, with no file yet, into the first day the clock names.
    """

    def __init__(self, path, clock=None):
        self.path = path
        self.clock = clock or platform.unix_time  # Unix seconds
        self.day = None  # 'YYYY-MM-DD' the counts belong to; None until the clock was ever set
        self.today = {}  # model -> [input, output, cache read, cache write]
        self.month = {}
        self.marks = {}  # name -> int, cleared when the day turns
        self.voice_today = [0] * _VOICE_FIELDS  # [seconds heard, characters spoken]
        self.voice_month = [0] * _VOICE_FIELDS
        self.days = {}  # 'YYYY-MM-DD' -> [tokens, micro-USD or None] of the past DAYS_KEPT days
        self.saved_used = 0  # today's tokens as last written: what MQTT publishes, so it never goes down
        self.dirty = False
        self.saved_at = None  # Unix seconds of the last write
        self.cost = None  # (key, counts) -> micro-USD or None: a profile's own price (set by safety/budget.py)

    def load(self):
        """Read the file; returns None, or a warning when it was unreadable and counting starts afresh."""
        try:
            state = files.read_json(self.path, FILE_MAX)
            if state is None:
                return None
            day = state["day"]
            if day is not None:
                check_date(day)
            today, month, marks = _counts(state["today"]), _counts(state["month"]), _marks(state["marks"])
            voice = state.get("voice") or [None, None]
            voice_today, voice_month = _voice(voice[0]), _voice(voice[1])
            days = _days(state.get("days", {}))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            return "usage file {} is unreadable ({}); token counts start afresh".format(
                self.path, str(exc) or exc.__class__.__name__)
        self.day, self.today, self.month, self.marks = day, today, month, marks
        self.voice_today, self.voice_month = voice_today, voice_month
        self.days = days
        self.saved_used = total(today)
        self.roll()
        return None

    def save(self):
        """Write everything at once (all or nothing); a failed write is reported and retried later."""
        state = {"v": 1, "day": self.day, "today": self.today, "month": self.month, "marks": self.marks,
                 "days": self.days}
        if self.voice_month != [0] * _VOICE_FIELDS:  # no speech service used: the file as before
            state["voice"] = [self.voice_today, self.voice_month]
        try:
            files.write_atomic(self.path, json.dumps(state))
        except OSError as exc:  # a full flash must not cost the user the reply
            platform.log("budget: could not save the token counts ({}); will retry".format(exc))
            return False
        self.dirty = False
        self.saved_at = self.clock()
        self.saved_used = total(self.today)
        return True

    def wait_s(self):
        """Seconds until the next write is allowed (0: now)."""
        if self.saved_at is None:
            return 0
        since = self.clock() - self.saved_at
        return 0 if since < 0 or since >= _SAVE_EVERY_S else _SAVE_EVERY_S - since

    def roll(self):
        """Start a new day (and month) when the clock says so; True when the counts were reset."""
        day = clock_date(self.clock())
        if day is None or day == self.day:
            return False
        if self.day is None:  # the clock was set for the first time: what was counted belongs to today
            self.day = day
            self.dirty = True
            return False
        if day[:7] != self.day[:7]:
            self.month = {}
            self.voice_month = [0] * _VOICE_FIELDS
        if self.today:  # the usage chart's row for the day that ended
            from mimi.safety.prices import day_cost

            self.days[self.day] = [total(self.today), day_cost(self.today, self.cost)]
        for old in sorted(self.days)[:-DAYS_KEPT]:
            del self.days[old]
        self.day, self.today, self.marks, self.dirty = day, {}, {}, True
        self.voice_today = [0] * _VOICE_FIELDS
        self.saved_used = 0  # a new day: the one drop a daily total makes
        return True

    def add(self, model, usage):
        """Count one reply's usage dict under model (cut to MODEL_NAME_MAX characters)."""
        model = str(model)[:MODEL_NAME_MAX] or OTHER
        row = [0] * len(FIELDS)
        for i in range(len(FIELDS)):
            value = usage.get(FIELDS[i]) if isinstance(usage, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                row[i] = value
        for table in (self.today, self.month):
            key = model if model in table or len(table) < MODELS_MAX - 1 else OTHER
            counts = table.get(key)
            if counts is None:
                counts = table[key] = [0] * _ESTIMATED_AT
            if row[_ESTIMATED_AT] and len(counts) == _ESTIMATED_AT:  # the estimates' count only where there are some
                counts.append(0)
            for i in range(len(counts)):
                counts[i] += row[i]
        self.dirty = True
        return sum(row[:TOKEN_FIELDS])

    def add_voice(self, seconds, chars):
        """Count seconds of voice notes transcribed and characters spoken."""
        for counts in (self.voice_today, self.voice_month):
            counts[0] += max(0, seconds)
            counts[1] += max(0, chars)
        self.dirty = True

    def used_today(self, free=None):
        """Today's tokens; free(key) True leaves that model's out (a profile that costs nothing)."""
        if free is None:
            return total(self.today)
        return sum(sum(row[:TOKEN_FIELDS]) for key, row in self.today.items() if not free(key))

