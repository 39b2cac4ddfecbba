# Model prices and the estimated cost of a period's tokens (a leaf: the usage reports, and the store once a day
# for the usage chart's row of the day that ended; not kept loaded for a turn).
from mimi.platform import const
from mimi.safety import DEMO_MODEL  # noqa: F401 (its tokens cost nothing; the reports import it from here)

_SEARCHES_AT = const(4)  # counts are [input, output, cache read, cache write] and optionally web searches

_SEARCH_MICRO_USD = const(10000)  # $10 per 1000 web searches
_CENT_MICRO = const(10000)  # micro-USD in a cent
# USD cents per million tokens (input, output) by model id prefix, the longest prefix winning; from
# platform.claude.com/docs/en/about-claude/pricing. Cache writes cost 1.25x input, cache reads 0.1x input.
# One model a line: prefix, input cents, output cents (a str constant stays in the image, not the heap).
PRICES = (
    "claude-opus-5-5 400 2000\n"
    "claude-opus-5 500 2500\n"
    "claude-opus-4-8 500 2500\n"
    "claude-opus-4-7 500 2500\n"
    "claude-opus-4-6 500 2500\n"
    "claude-opus-4-5 500 2500\n"
    "claude-opus-4 1500 7500\n"  # Opus 4 and 4.1
    "claude-3-opus 1500 7500\n"
    "claude-sonnet-5 200 1000\n"  # Sonnet 5 and 5.5
    "claude-sonnet-4 300 1500\n"  # Sonnet 4, 4.5 and 4.6
    "claude-3-7-sonnet 300 1500\n"
    "claude-3-5-sonnet 300 1500\n"
    "claude-haiku-5-5 10 50\n"  # prompts up to 100k tokens
    "claude-haiku-4-5 100 500\n"
    "claude-3-5-haiku 80 400\n"
    "claude-3-haiku 25 125\n"
)


def price_of(model):
    """(input, output) USD cents per million tokens, or None for a model not in PRICES."""
    best = None
    for line in PRICES.split("\n"):
        entry = line.split()
        if entry and model.startswith(entry[0]) and (best is None or len(entry[0]) > len(best[0])):
            best = entry
    return None if best is None else (int(best[1]), int(best[2]))


def cost_micro_usd(model, counts):
    """Estimated cost of [input, output, cache read, cache write] tokens in millionths of a USD, or None."""
    if model == DEMO_MODEL:
        return 0
    price = price_of(model)
    if price is None:
        return None
    return cost_at((price[0] * _CENT_MICRO, price[1] * _CENT_MICRO), counts)


def cost_at(price, counts):
    """Micro-USD of [input, output, cache read, cache write, searches] at (input, output) micro-USD per MTok."""
    micro_in, micro_out = price
    # micro-USD per MTok * tokens / 10^6; in 20ths so 1.25x and 0.1x stay whole numbers
    twentieths = 20 * counts[0] * micro_in + 20 * counts[1] * micro_out + 2 * counts[2] * micro_in \
        + 25 * counts[3] * micro_in
    searches = counts[_SEARCHES_AT] if len(counts) > _SEARCHES_AT else 0
    return (twentieths + 10000000) // 20000000 + searches * _SEARCH_MICRO_USD


def day_cost(table, cost=None):
    """Estimated micro-USD of a period's table (key -> counts), or None when a model has no known price.
    cost(key, counts): the price of a profile's model (key_cost); default: the list price by model."""
    total = 0
    for key in table:
        one = cost(key, table[key]) if cost is not None else cost_micro_usd(key, table[key])
        if one is None:
            return None
        total += one
    return total
