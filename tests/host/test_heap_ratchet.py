# The heap ratchet: per form and MicroPython binary, the bench's 10-turn chat at the fixed heap of
# bench/heap_budget.json and the idle heap after it, firmware only, held to that file. A change that grows the heap
# fails here and raises the figure there, with its reason, in the same commit. The bench finds the edges.
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from bench.heap import BUDGET_FILE, RATCHET_FORMS, RATCHET_MARK, budget
from tests.runtimes import ROOT

# The unix port at the chip's pointer size, its mbedTLS in the GC heap (../shared/tools/README.md); CI has none.
MICROPYTHON32 = os.path.join(os.path.dirname(ROOT), "shared", "tools", "micropython32")
BINARIES = ("micropython", "micropython32")
RUN_TIMEOUT_S = 900


def micropython32():
    """(path, None) of the 32-bit unix port (MIMI_MICROPYTHON when it names one), or (None, why it cannot run)."""
    named = os.environ.get("MIMI_MICROPYTHON")
    path = named if named and os.path.basename(named) == "micropython32" else MICROPYTHON32
    if not os.path.exists(path):
        return None, "no micropython32 at {} (the chip's pointer size: its figures join the ratchet where it " \
                     "is present)".format(path)
    try:
        done = subprocess.run([path, "-c", "pass"], capture_output=True, timeout=30)
    except OSError as exc:
        return None, "micropython32 does not run here ({}): it needs Debian's libc6-i386".format(exc)
    if done.returncode:
        return None, "micropython32 does not run here: {}".format(done.stderr.decode(errors="replace")[-200:])
    return path, None


@pytest.fixture(scope="module", params=BINARIES)
def ratchet_runs(request):
    """Every form's ratchet figures under one binary (python -m bench.heap: one bundle, one image, one fake)."""
    binary = None
    if request.param == "micropython32":
        binary, why = micropython32()
        if binary is None:
            pytest.skip(why)
    work = tempfile.mkdtemp(prefix="mimi-ratchet-")  # one length of flash path on every machine
    try:
        cmd = [sys.executable, "-m", "bench.heap"] + (["--binary", binary] if binary else [])
        proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, BENCH_WORK=work), capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs = {}
    for line in proc.stdout.splitlines():
        if line.startswith(RATCHET_MARK):
            run = json.loads(line[len(RATCHET_MARK):])
            runs[run["form"]] = run
    return request.param, runs, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("form", RATCHET_FORMS)
def test_the_chat_fits_its_heap_and_idle_stays_within_its_budget(ratchet_runs, form):
    binary, runs, output = ratchet_runs
    assert form in runs, output
    run = runs[form]
    where = "{} form, {}, {} KB heapsize".format(form, binary, run["heap_kb"])
    assert run["binary"] == binary
    raise_it = "if the growth is meant, raise it in {} with the reason, in the same commit".format(
        os.path.relpath(BUDGET_FILE, ROOT))
    assert run["idle_kb"] is not None, "the 10-turn chat failed at {} ({} KB beyond the images in the romfs " \
        "form): {}; {}".format(where, run["chat_heap_kb"], run["why"], raise_it)
    assert run["idle_kb"] <= run["idle_budget_kb"], "idle after the chat {} KB, firmware only, over its budget " \
        "of {} KB ({}); {}".format(run["idle_kb"], run["idle_budget_kb"], where, raise_it)
    # The figures are a roomy board's: the mode's own test is tests/e2e/test_small_board.py.
    assert run["board"] == [], run["board"]


def test_every_figure_of_the_budget_has_its_reason():
    forms = budget()["forms"]
    assert sorted(forms) == sorted(RATCHET_FORMS)
    for form, by_binary in forms.items():
        assert sorted(by_binary) == sorted(BINARIES), form
        for binary, figures in by_binary.items():
            assert sorted(figures) == ["chat_heap_kb", "idle_kb"], (form, binary)
            for name, figure in figures.items():
                assert figure["budget"] > 0, (form, binary, name)
                assert len(figure["reason"]) > 40, (form, binary, name)  # what was measured, where, and the margin
                assert figure.get("goal", 0) <= figure["budget"], (form, binary, name)
