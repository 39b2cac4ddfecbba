# The benchmark suite still runs: a quick pass over its cheap figures, merged into the file (no timing is judged).
import json
import os
import subprocess
import sys

from tests.runtimes import ROOT

FIGURES = ("history_load", "sse_parsing", "prompt_cache")


# What the file held before: a figure this run takes again (its old value goes), one it does not (it stays).
EARLIER = "2026-11-24 07:43 UTC"
HELD = {"machine": {"cpu": "an earlier machine", "nproc": 64}, "quick": False, "timing_heap": "1024K",
        "taken": EARLIER, "seconds": 439.6,
        "figures": {"history_load": {"mpy": {"100": {"median": -1}}, "cpython": {"100": {"median": -1}}},
                    "throughput": {"mpy": {"median": 46.0, "p10": 44.1, "p90": 47.2, "n": 5},
                                   "cpython": {"median": 119.0, "p10": 117.5, "p90": 121.0, "n": 5}}}}


def test_quick_bench_merges_the_cheap_figures_into_the_file(tmp_path):
    out = tmp_path / "results.json"
    out.write_text(json.dumps(HELD))
    env = dict(os.environ, BENCH_QUICK="1", BENCH_WORK=str(tmp_path / "work"))
    proc = subprocess.run([sys.executable, "-m", "bench", "--only", ",".join(FIGURES),
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())
    (now,) = set(results["runs"]) - {EARLIER}
    run = results["runs"][now]
    assert run["quick"] is True and run["only"] == sorted(FIGURES)
    assert run["machine"]["nproc"] >= 1 and "MicroPython" in run["machine"]["micropython"]
    assert results["runs"][EARLIER]["machine"] == HELD["machine"]
    figures = results["figures"]
    assert sorted(figures) == sorted(FIGURES + ("throughput",))
    assert figures["throughput"] == HELD["figures"]["throughput"]  # not taken: kept, with when and where
    assert results["taken"]["throughput"] == {"mpy": EARLIER, "cpython": EARLIER}
    assert all(results["taken"][name] == {"mpy": now, "cpython": now} for name in FIGURES)
    for runtime in ("mpy", "cpython"):
        history = figures["history_load"][runtime]
        for lines in ("100", "10000"):
            assert history[lines]["messages"] == 20  # the last 20 messages, whatever the length
            assert 0 < history[lines]["median"] < 10_000
        sse = figures["sse_parsing"][runtime]
        assert sse["median"] > 0 and sse["text_chars"] == 48 * 1024
        cache = figures["prompt_cache"][runtime]
        assert cache["conversation_ok"] and cache["compared"] == 10, cache
        assert 0 <= cache["share"] <= 1
    assert set(results["verdicts"]) == set(FIGURES + ("throughput",))
    assert "| history_load |" in proc.stdout and "| throughput |" in proc.stdout  # the table was printed
    assert "taken {}: throughput; on an earlier machine (64 cores".format(EARLIER) in proc.stdout
