# bench/results.json takes each run's figures into what it holds: a figure taken again replaces its old one, every
# other figure stays with the time and machine it was taken on (bench/results.py; the CLI: test_bench_smoke.py).
import json
import os
import subprocess
import sys

import pytest

from bench import results
from bench.__main__ import GROUPS
from bench.report import GOALS, table
from tests.runtimes import ROOT

EPYC = {"cpu": "AMD EPYC", "nproc": 2, "os": "Linux", "cpython": "3.11.7", "micropython": "1.26"}
XEON = {"cpu": "Intel Xeon", "nproc": 4, "os": "Linux", "cpython": "3.12.1", "micropython": "1.27"}


def run(taken, machine, quick=False):
    return {"taken": taken, "machine": machine, "quick": quick, "timing_heap": "1024K", "seconds": 60.0,
            "only": None}


FULL = {"throughput": {"mpy": {"median": 46}, "cpython": {"median": 120}},
        "sse_parsing": {"mpy": {"median": 1.5}, "cpython": {"median": 9.0}},
        "photo_turn_heap": {"heap": "1024K", "photo_kb": 200, "mpy": {"photo_above_text_kb": {"median": 4},
                                                                      "text_peak_kb": {"median": 30}}},
        "tls_cost": {"micropython": {"after_handshake": 2.6}, "micropython32": {"after_handshake": 23.8}}}
FIRST = "2026-11-24 07:43:10 UTC"
SECOND = "2026-11-27 10:00:00 UTC"


def full_file():
    return results.merge({}, run(FIRST, EPYC), FULL)


def test_a_run_of_some_figures_replaces_theirs_and_keeps_every_other_with_its_time_and_machine():
    held = full_file()
    merged = results.merge(held, run(SECOND, XEON, quick=True), {"sse_parsing": {"mpy": {"median": 2.0},
                                                                                 "cpython": {"median": 11.0}}})
    assert merged["figures"]["sse_parsing"] == {"mpy": {"median": 2.0}, "cpython": {"median": 11.0}}
    assert merged["taken"]["sse_parsing"] == {"mpy": SECOND, "cpython": SECOND}
    for name in ("throughput", "photo_turn_heap", "tls_cost"):  # not taken again: as they were, and when, and where
        assert merged["figures"][name] == FULL[name]
        assert set(merged["taken"][name].values()) == {FIRST}
    assert merged["runs"][FIRST]["machine"] == EPYC and merged["runs"][FIRST]["quick"] is False
    assert merged["runs"][SECOND]["machine"] == XEON and merged["runs"][SECOND]["quick"] is True
    assert held == full_file()  # merge() gives a new dict


def test_a_binary_measured_again_replaces_its_own_figures_only():
    """MIMI_MICROPYTHON's binary measured once; a later run under the default MicroPython alone keeps them."""
    merged = results.merge(full_file(), run(SECOND, XEON), {"tls_cost": {"micropython": {"after_handshake": 2.4}}})
    assert merged["figures"]["tls_cost"] == {"micropython": {"after_handshake": 2.4},
                                             "micropython32": {"after_handshake": 23.8}}
    assert merged["taken"]["tls_cost"] == {"micropython": SECOND, "micropython32": FIRST}
    assert "tls_cost (micropython)" in results.taken_by(merged, SECOND)
    assert "tls_cost (micropython32)" in results.taken_by(merged, FIRST)


def test_a_figures_parameters_are_the_newest_runs_its_runtimes_not_measured_stay():
    retaken = {"heap": "768K", "photo_kb": 100, "romfs": {"photo_above_text_kb": {"median": 2}}}
    merged = results.merge(full_file(), run(SECOND, XEON), {"photo_turn_heap": retaken})
    assert merged["figures"]["photo_turn_heap"] == dict(retaken, mpy=FULL["photo_turn_heap"]["mpy"])
    assert merged["taken"]["photo_turn_heap"] == {"mpy": FIRST, "romfs": SECOND}


def test_a_figure_without_runtimes_is_replaced_whole():
    held = results.merge({}, run(FIRST, EPYC), {"gateway_heap": {"kb": 12.5, "note": "a note"}})
    merged = results.merge(held, run(SECOND, XEON), {"gateway_heap": {"kb": 11.0}})
    assert merged["figures"]["gateway_heap"] == {"kb": 11.0}
    assert merged["taken"]["gateway_heap"] == {results.WHOLE: SECOND}
    assert list(merged["runs"]) == [SECOND]


def test_a_full_run_takes_every_figure_and_the_older_run_goes():
    merged = results.merge(full_file(), run(SECOND, XEON), FULL)
    assert list(merged["runs"]) == [SECOND]
    assert all(set(by_entry.values()) == {SECOND} for by_entry in merged["taken"].values())
    assert sorted(merged["taken"]) == sorted(FULL)


def test_two_runs_in_the_same_second_stay_two():
    merged = results.merge(full_file(), run(FIRST, XEON), {"sse_parsing": FULL["sse_parsing"]})
    again = FIRST + " (2)"
    assert merged["taken"]["sse_parsing"] == {"mpy": again, "cpython": again}
    assert merged["runs"][again]["machine"] == XEON and merged["runs"][FIRST]["machine"] == EPYC


def test_every_figure_the_bench_knows_is_measured_by_a_full_run():
    measured = [name for names, _measure in GROUPS for name in names]
    assert sorted(measured) == sorted(GOALS)  # a full run writes every figure group; --only takes GOALS' names
    assert len(set(measured)) == len(measured)


def test_the_table_says_when_and_where_each_figure_was_taken():
    merged = results.merge(full_file(), run(SECOND, XEON), {"tls_cost": {"micropython": {"after_handshake": 2.4}}})
    footer = table(merged).split("\n\n", 1)[1].splitlines()
    assert footer[0].startswith("taken {}: tls_cost (micropython); on Intel Xeon (4 cores".format(SECOND))
    assert footer[1].startswith("taken {}: throughput, sse_parsing, photo_turn_heap, tls_cost (micropython32); "
                                "on AMD EPYC (2 cores".format(FIRST))


def test_a_file_written_by_one_run_reads_as_that_runs(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"machine": EPYC, "quick": False, "timing_heap": "1024K", "seconds": 439.6,
                                "taken": "2026-11-24 07:43 UTC", "figures": FULL, "verdicts": {}}))
    held = results.load(str(path))
    assert held["figures"] == FULL
    assert held["taken"]["tls_cost"] == {"micropython": "2026-11-24 07:43 UTC",
                                         "micropython32": "2026-11-24 07:43 UTC"}
    assert held["runs"]["2026-11-24 07:43 UTC"]["machine"] == EPYC


def test_written_whole_and_read_back(tmp_path):
    path = str(tmp_path / "results.json")
    assert results.load(path) == {}
    results.write(path, full_file())
    assert results.load(path) == full_file()
    assert os.listdir(str(tmp_path)) == ["results.json"]


@pytest.mark.parametrize("text", ['{"figures": {"throughput": ', "[1, 2]"])
def test_a_file_that_is_not_results_is_refused_before_anything_is_measured(tmp_path, text):
    path = tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(results.Unreadable):
        results.load(str(path))
    proc = subprocess.run([sys.executable, "-m", "bench", "--only", "sse_parsing", "--out", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]  # one line
    assert proc.stderr.startswith("bench: {} ".format(path)) and "nothing was measured" in proc.stderr
    assert "building" not in proc.stdout
    assert path.read_text() == text  # untouched


@pytest.mark.parametrize("lost", [0, 2])
def test_a_run_that_lost_a_turn_exits_non_zero_and_names_it(tmp_path, monkeypatch, capsys, lost):
    import bench.__main__ as cli

    times = {"median": 9.0, "p10": 8.0, "p90": 10.0}
    figure = {"mpy": {"overhead_ms": times, "inbound_ms": times, "outbound_ms": times, "failed_turns": lost}}
    monkeypatch.setattr(cli, "build_bundle", lambda: None)  # nothing runs the firmware: the figure is given
    monkeypatch.setattr(cli, "build_romfs", lambda: None)
    monkeypatch.setattr(cli, "claim_work", lambda: None)  # a bench running beside the suite keeps its folder
    monkeypatch.setattr(cli, "GROUPS", ((("firmware_overhead",), lambda fake, log: (figure,)),))
    code = cli.main(["--only", "firmware_overhead", "--out", str(tmp_path / "results.json")])
    said = capsys.readouterr().err
    if lost:
        assert code == 1 and "turns lost" in said and "firmware_overhead.mpy: 2 failed_turns" in said, said
    else:
        assert code == 0 and "turns lost" not in said, said
    assert json.loads((tmp_path / "results.json").read_text())["figures"]["firmware_overhead"]["mpy"]["failed_turns"] == lost


_HOLD = "from bench.setup import claim_work; claim_work(); print('held', flush=True); import sys; sys.stdin.read()"


def test_a_second_run_in_the_same_work_folder_is_refused_before_it_touches_it(tmp_path):
    # Two runs in one folder: the second remade the first's test CA, and the first's TLS chats failed as untrusted.
    work = tmp_path / "work"
    env = dict(os.environ, BENCH_WORK=str(work))
    holder = subprocess.Popen([sys.executable, "-c", _HOLD], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        out = tmp_path / "results.json"
        proc = subprocess.run([sys.executable, "-m", "bench", "--only", "sse_parsing", "--out", str(out)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert "bench: another run (pid {}) is using {}".format(holder.pid, work) in proc.stderr, proc.stderr
        assert "BENCH_WORK=" in proc.stderr
        assert "building" not in proc.stdout and not out.exists()
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert not (work / "running.pid").exists()  # given back when the run ends

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (work / "running.pid").write_text(gone.stdout.strip())  # left by a run that was killed
    taken = subprocess.run([sys.executable, "-c", _HOLD], cwd=ROOT, env=env, input="", capture_output=True,
                           text=True, timeout=30)
    assert taken.returncode == 0 and taken.stdout == "held\n", taken.stderr
    assert not (work / "running.pid").exists()
