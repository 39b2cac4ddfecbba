# The benchmark suite still runs: a quick pass over its cheap figures (no timing is judged).
import json
import os
import subprocess
import sys

from tests.runtimes import ROOT

FIGURES = ("history_load", "sse_parsing", "prompt_cache")


def test_quick_bench_writes_the_cheap_figures(tmp_path):
    out = tmp_path / "results.json"
    env = dict(os.environ, BENCH_QUICK="1", BENCH_WORK=str(tmp_path / "work"))
    proc = subprocess.run([sys.executable, "-m", "bench", "--only", ",".join(FIGURES),
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())
    assert results["quick"] is True
    assert results["machine"]["nproc"] >= 1 and "MicroPython" in results["machine"]["micropython"]
    figures = results["figures"]
    assert sorted(figures) == sorted(FIGURES)
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
    assert set(results["verdicts"]) == set(FIGURES)
    assert "| history_load |" in proc.stdout  # the table was printed
