# The `usage` and `budget` console reports: tokens per model with estimated costs, and the limits in force
# (imported when one of them is typed).
from mimi import platform
from mimi.platform import const
from mimi.safety.prices import DEMO_MODEL, cost_micro_usd, day_cost
from mimi.safety.usage_store import TOKEN_FIELDS, clock_date, estimated, searches, total

_DAY_S = const(86400)

LABELS = ("input", "output", "cache read", "cache write", "web searches")  # the order of usage_store.FIELDS


def usd(micro):
    """'$0.0123' for a cost in millionths of a USD (rounded to 1/100 cent)."""
    micro = (micro + 50) // 100
    return "${}.{:04d}".format(micro // 10000, micro % 10000)


def _label(key, profiles):
    """How a usage key reads: a claude model as it is (or "claude (model)" beside other profiles), another
    profile's "<profile> <model>" as "profile (model)", the offline demo as such."""
    if key == DEMO_MODEL:
        return "offline demo (make sim's stand-in: not billed)"
    name, _, model = key.partition(" ")
    if model:
        return "{} ({})".format(name, model)
    return "claude ({})".format(key) if profiles else key


def report(table, title, cost=None):
    """Console lines for one period: each model's tokens by kind and estimated cost (split by profile: claude's
    models, then "<profile> <model>"), then the total. cost(key, counts): prices.key_cost (a profile's price)."""
    yield title
    if not table:
        yield "  (no tokens used)"
        return
    known, unknown = 0, False
    profiles = any(" " in key for key in table)
    for model in sorted(table):
        counts = table[model]
        price = cost(model, counts) if cost is not None else cost_micro_usd(model, counts)
        if price is None:
            unknown = True
        else:
            known += price
        searched = counts[TOKEN_FIELDS] if len(counts) > TOKEN_FIELDS else 0
        kinds = ", ".join("{} {}".format(LABELS[i], counts[i]) for i in range(TOKEN_FIELDS))
        tokens = "{} = {} tokens".format(kinds, sum(counts[:TOKEN_FIELDS]))
        if searched:  # "web searches 0" says nothing
            tokens += ", {} {}".format(searched, LABELS[TOKEN_FIELDS])
        guessed = estimated(counts)
        if guessed:
            tokens += " (estimated from the characters of {} repl{}: the server reported no usage)".format(
                guessed, "y" if guessed == 1 else "ies")
        shown = "price unknown (llm_price sets one)" if price is None and " " in model else \
            "price unknown" if price is None else "about " + usd(price)
        yield "  {}: {}, {}".format(_label(model, profiles), tokens, shown)
    yield "  total: {} tokens, about {}{}".format(
        total(table), usd(known), " plus models of unknown price" if unknown else "")


def voice_lines(counts, title, setting):
    """A period's seconds heard and characters spoken with their cost (voice_config's prices), if any."""
    if counts[0] or counts[1]:
        cost = (counts[0] * setting("stt_cents_hour") * 10000 // 3600
                + counts[1] * setting("tts_cents_mchar") // 100)  # in micro-USD
        yield "  voice {}: {} s of voice notes heard, {} characters spoken, about {}".format(
            title, counts[0], counts[1], usd(cost))


def limit_lines(store, limit, calls_this_hour, setting, now, used):
    """Today's tokens against the daily budget (used: those it counts), and the rate limits (setting(key): a
    safety_config value)."""
    from mimi.safety.budget_texts import RAISE_HINT

    if limit > 0:
        yield "budget: {} of {} tokens today ({}%){}".format(
            used, limit, used * 100 // limit, "; STOPPED until midnight UTC or {}".format(RAISE_HINT)
            if used >= limit else "")
    else:
        yield "budget: {} tokens today; no daily limit (budget <tokens> sets one)".format(used)
    free = store.used_today() - used
    if free:
        yield "  plus {} tokens of free profiles{} today (never counted against the budget)".format(
            free, " and the offline demo" if DEMO_MODEL in store.today else "")
    yield "  model calls this hour: {} of {}; messages per user: at most {} a minute".format(
        calls_this_hour, setting("llm_per_hour"), setting("user_per_min"))
    cap, searched = setting("day_searches"), searches(store.today)
    if searched or cap <= 0:
        yield "  Claude's web searches today: {} of {}".format(searched, cap if cap > 0 else "no limit")
    heard, spoken = store.voice_today
    if heard or spoken:
        yield "  voice today: {} of {} s heard, {} of {} characters spoken (0: no limit)".format(
            heard, setting("day_audio_s"), spoken, setting("day_tts_chars"))
    if clock_date(now) is None:
        yield "  clock not set yet: counting into {} until NTP sets it".format(store.day or "the first day it names")


def say(lines):
    for line in lines:
        platform.console_write(line + "\n")


def history(store, count):
    """[[day, tokens, micro-USD or None]] of the last `count` days up to today, oldest first (the web app's usage
    chart); a day without use has 0 tokens."""
    now = store.clock()
    if store.day is None or clock_date(now) != store.day:  # the clock is not set (yet)
        return [] if store.day is None else [[store.day, total(store.today), day_cost(store.today, store.cost)]]
    rows = []
    for back in range(count - 1, -1, -1):
        day = platform.utc_date(now - back * _DAY_S)
        if day == store.day:
            rows.append([day, total(store.today), day_cost(store.today, store.cost)])
        else:
            row = store.days.get(day) or [0, 0]
            rows.append([day, row[0], row[1]])
    return rows
