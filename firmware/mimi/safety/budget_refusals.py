# What a sender is told when a budget or rate limit refuses and the owner when 80% or 100% of the
# daily budget is used (imported at the first of these), and forgetting the quietest sender.
from mimi.platform import const
from mimi.safety import usage_store
from mimi.safety.budget import NS, RAISE_HINT

_MINUTE_S = const(60)
_HOUR_MINUTES = const(60)
_DAY_S = const(86400)
_SHOWN_IN_S_BELOW = const(90)  # waits shorter than this are said in seconds, then minutes, then hours
_SHOWN_IN_MIN_BELOW = const(90)
_TOLD_WARN = "warned"  # marks: the day limit the 80% / 100% notice was sent for
_TOLD_STOP = "stopped"


def _wait_text(seconds):
    if seconds < _SHOWN_IN_S_BELOW:
        return "{} s".format(max(1, seconds))
    minutes = (seconds + _MINUTE_S - 1) // _MINUTE_S
    return "{} min".format(minutes) if minutes < _SHOWN_IN_MIN_BELOW else "{} h {} min".format(minutes // 60, minutes % 60)


def tell_owner(budget, limit, used):
    """Past 80% of today's limit (budget.py checked): tell the owner once per limit at 80% and at 100%;
    True when a notice went out."""
    marks = budget.store.marks
    if used >= limit and marks.get(_TOLD_STOP) != limit:
        marks[_TOLD_STOP] = marks[_TOLD_WARN] = limit
        budget.tell("budget: today's token budget is used up ({} of {} tokens); messages get a polite "
                    "refusal until midnight UTC. Raise it on the console with {}".format(used, limit, RAISE_HINT))
        return True
    if marks.get(_TOLD_WARN) != limit:
        marks[_TOLD_WARN] = limit
        budget.tell("budget: {}% of today's token budget used ({} of {} tokens); at 100% I stop answering "
                    "until midnight UTC or until you raise it with {}".format(
                        used * 100 // limit, used, limit, RAISE_HINT))
        return True
    return False


def stop_text(budget):
    """The polite stop a user sees once today's budget is used."""
    now = budget.clock()
    when = "after midnight UTC"
    if usage_store.clock_date(now) is not None:
        when += " (in about {})".format(_wait_text(_DAY_S - now % _DAY_S))
    return ("I've used today's token budget ({} of {} tokens), so I'm taking a break. The owner can raise it "
            "on my console with {} (e.g. budget {}), or I'll be back {}.".format(
                budget.store.used_today(), budget.limit(), RAISE_HINT, budget.limit() * 2, when))


def _hour_frees_in(budget):
    """Seconds until the oldest counted call leaves the hour."""
    now = budget.clock()
    for age in range(_HOUR_MINUTES - 1, -1, -1):
        if budget.minutes[(budget.minute - age) % _HOUR_MINUTES]:
            return (budget.minute - age + _HOUR_MINUTES) * _MINUTE_S - now
    return 0


def hour_refusal(budget, cap):
    """Claude calls this hour reached safety_config.llm_per_hour."""
    return ("I've made as many Claude calls as I may in an hour ({}); please try again in about {}. "
            "The owner can raise the limit with config_set {}.llm_per_hour <calls>.".format(
                cap, _wait_text(_hour_frees_in(budget)), NS))


def user_refusal(cap, times, now):
    """A sender's messages this minute (times, oldest first) reached safety_config.user_per_min."""
    return ("You're sending messages faster than I can take them (at most {} a minute). "
            "Please try again in {}.".format(cap, _wait_text(times[0] + _MINUTE_S - now)))


def forget_quietest(senders):
    """Drop the sender quiet for the longest from {user key: admitted times}."""
    quietest = None
    for key in senders:
        times = senders[key]
        last = times[-1] if times else -1
        if quietest is None or last < quietest[1]:
            quietest = (key, last)
    del senders[quietest[0]]
