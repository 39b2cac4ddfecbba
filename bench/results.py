# bench/results.json: each run's figures merged in, every figure kept with the time and machine it was taken on.
#
# The file: "figures" {name: figure}; "taken" {name: {entry: run}}; "runs" {run: {"machine", "quick",
# "timing_heap", "seconds", "only"}}, a run named by the time it started; "verdicts" over every figure held.
# A figure's entries are its runtimes' (or MicroPython binaries') dicts ("mpy", "romfs", "micropython32"...), or
# the whole figure (WHOLE) when it has none. A run replaces the entries it took; a figure's other values
# (its parameters, as "heap") are the newest run's; every entry it did not take stays with its own run.
import json
import os

WHOLE = "*"  # the entry name of a figure that has no per-runtime dicts


class Unreadable(Exception):
    """The results file exists but is not a results file (message: one line)."""


def entries(figure):
    """The names of the parts of a figure a run takes as one."""
    if isinstance(figure, dict):
        named = [key for key, value in figure.items() if isinstance(value, dict)]
        if named:
            return named
    return [WHOLE]


def load(path):
    """The results held at path ({} when there is no file); Unreadable when it cannot be read."""
    try:
        with open(path) as f:
            held = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise Unreadable("{} cannot be read ({})".format(path, e)) from None
    if not isinstance(held, dict) or not isinstance(held.get("figures"), dict):
        raise Unreadable("{} holds no \"figures\"".format(path))
    if "runs" not in held:  # one run's file, as the bench wrote before it merged: every figure that run's
        run = held.get("taken") or "unknown"
        held = {"figures": held["figures"],
                "taken": {name: dict.fromkeys(entries(figure), run) for name, figure in held["figures"].items()},
                "runs": {run: {key: held.get(key) for key in ("machine", "quick", "timing_heap", "seconds")}}}
    return held


def merge(held, run, figures):
    """held (load()'s) with one run's figures merged in: a new dict, held untouched.

    run: {"taken": "<time> UTC", "machine": {...}, "quick", "timing_heap", "seconds", "only"}."""
    out_figures = dict(held.get("figures", {}))
    taken = {name: dict(by_entry) for name, by_entry in held.get("taken", {}).items()}
    runs = dict(held.get("runs", {}))
    run_id = run["taken"]
    n = 1
    while run_id in runs:  # two runs in the same second
        n += 1
        run_id = "{} ({})".format(run["taken"], n)
    for name, figure in figures.items():
        new = entries(figure)
        old = out_figures.get(name)
        merged = dict(figure) if WHOLE not in new else figure
        kept = {}
        if old is not None and WHOLE not in new:
            for entry in entries(old):
                if entry != WHOLE and entry not in new:
                    merged[entry] = old[entry]
                    kept[entry] = taken.get(name, {}).get(entry)
        out_figures[name] = merged
        taken[name] = {**kept, **dict.fromkeys(new, run_id)}
    runs[run_id] = {key: value for key, value in run.items() if key != "taken"}
    used = {r for by_entry in taken.values() for r in by_entry.values()}
    runs = {r: record for r, record in runs.items() if r in used}  # a run whose every figure was taken again
    return {"figures": out_figures, "taken": taken, "runs": runs}


def taken_by(results, run_id):
    """The figures of one run the results hold; a figure only some of whose entries are that run's names them."""
    out = []
    for name, by_entry in results.get("taken", {}).items():
        mine = [entry for entry, r in by_entry.items() if r == run_id]
        if mine:
            out.append(name if len(mine) == len(by_entry) else "{} ({})".format(name, ", ".join(mine)))
    return out


def write(path, results):
    """Write results to path whole or not at all (a crash leaves the file as it was)."""
    part = "{}.{}.part".format(path, os.getpid())
    with open(part, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(part, path)
