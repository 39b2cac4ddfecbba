# What a sender is told when a budget or rate limit refuses, and the owner at 80% and 100% of the daily
# budget (imported at the first of these): texts made from the values budget.py hands over.
from mimi.platform import const
from mimi.safety import NS

RAISE_HINT = "budget <tokens>"
_S_PER_MIN = const(60)
_SHOWN_IN_S_BELOW = const(90)  # waits shorter than this are said in seconds, then minutes, then hours
_SHOWN_IN_MIN_BELOW = const(90)


def _wait_text(seconds):
    if seconds < _SHOWN_IN_S_BELOW:
        return "{} s".format(max(1, seconds))
    minutes = (seconds + _S_PER_MIN - 1) // _S_PER_MIN
    if minutes < _SHOWN_IN_MIN_BELOW:
        return "{} min".format(minutes)
    return "{} h {} min".format(minutes // 60, minutes % 60)


def used_up(used, limit):
    """The owner's notice at 100% of today's limit."""
    return ("budget: today's token budget is used up ({} of {} tokens); messages get a polite refusal until "
            "midnight UTC. Raise it on the console with {}".format(used, limit, RAISE_HINT))


def nearly_used(used, limit):
    """The owner's notice past 80% of today's limit."""
    return ("budget: {}% of today's token budget used ({} of {} tokens); at 100% I stop answering until "
            "midnight UTC or until you raise it with {}".format(used * 100 // limit, used, limit, RAISE_HINT))


def stop_text(used, limit, until_midnight_s):
    """The polite stop a user sees once today's budget is used (until_midnight_s None: the clock is not set)."""
    when = "after midnight UTC"
    if until_midnight_s is not None:
        when += " (in about {})".format(_wait_text(until_midnight_s))
    return ("I've used today's token budget ({} of {} tokens), so I'm taking a break. The owner can raise it "
            "on my console with {} (e.g. budget {}), or I'll be back {}.".format(
                used, limit, RAISE_HINT, limit * 2, when))


def hour_refusal(cap, frees_in_s):
    """Claude calls this hour reached safety_config.llm_per_hour."""
    return ("I've made as many Claude calls as I may in an hour ({}); please try again in about {}. "
            "The owner can raise the limit with config_set {}.llm_per_hour <calls>.".format(
                cap, _wait_text(frees_in_s), NS))


def user_refusal(cap, wait_s):
    """A sender's messages this minute reached safety_config.user_per_min."""
    return ("You're sending messages faster than I can take them (at most {} a minute). "
            "Please try again in {}.".format(cap, _wait_text(wait_s)))
