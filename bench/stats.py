# Summaries of repeated measurements: the median with its spread (p10/p90, min/max).


def percentile(values, q):
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        return None
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def summary(values, digits=3):
    """{"median", "p10", "p90", "min", "max", "n"} of a list of numbers (None values dropped)."""
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "p10": None, "p90": None, "min": None, "max": None, "n": 0}

    def r(x):
        return round(x, digits)

    return {"median": r(percentile(values, 50)), "p10": r(percentile(values, 10)),
            "p90": r(percentile(values, 90)), "min": r(min(values)), "max": r(max(values)),
            "n": len(values)}


def tail(values, digits=3):
    """summary() plus p99: for latency distributions with many samples."""
    out = summary(values, digits)
    p99 = percentile([v for v in values if v is not None], 99)
    out["p99"] = None if p99 is None else round(p99, digits)
    return out
