# The `usage` and `budget` console commands (imported when one is typed).
from mimi import platform
from mimi.safety import usage_store, usage_report
from mimi.safety.budget import NS, RAISE_HINT


def _out(lines):
    for line in lines:
        platform.console_write(line + "\n")


def _state_lines(budget):
    store, limit = budget.store, budget.limit()
    used = store.used_today()
    if limit > 0:
        yield "budget: {} of {} tokens today ({}%){}".format(
            used, limit, used * 100 // limit, "; STOPPED until midnight UTC or {}".format(RAISE_HINT)
            if used >= limit else "")
    else:
        yield "budget: {} tokens today; no daily limit (budget <tokens> sets one)".format(used)
    yield "  Claude calls this hour: {} of {}; messages per user: at most {} a minute".format(
        budget.calls_this_hour(), budget._get("llm_per_hour"), budget._get("user_per_min"))
    cap, searched = budget._get("day_searches"), usage_store.searches(store.today)
    if searched or cap <= 0:
        yield "  Claude's web searches today: {} of {}".format(searched, cap if cap > 0 else "no limit")
    if usage_store.clock_date(budget.clock()) is None:
        yield "  clock not set yet: counting into {} until NTP sets it".format(store.day or "the first day it names")


async def usage(budget):
    store = budget.store
    store.roll()
    day = store.day or "clock not set"
    _out(usage_report.report(store.today, "today ({} UTC):".format(day)))
    _out(usage_report.report(store.month, "this month ({}):".format(day[:7] if store.day else day)))
    _out(_state_lines(budget))


async def set_budget(budget, tokens=None):
    if tokens is not None:
        budget.config.set(NS, "day_tokens", tokens)
        _out(["daily token budget set to {} tokens (saved; in effect now)".format(budget.limit())])
    _out(_state_lines(budget))
