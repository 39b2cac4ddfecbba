# The soak in short (SOAK_QUICK=1: 40 turns with seeded faults): nothing crashes, is lost or doubled.
import json
import os
import subprocess
import sys

from tests.runtimes import FIRMWARE_MP_HEAP, ROOT


def test_a_quick_soak_loses_nothing_and_doubles_nothing(tmp_path):
    out = tmp_path / "soak.json"
    env = dict(os.environ, SOAK_QUICK="1", SOAK_SEED="7", SOAK_RATE="0.15",
               SOAK_HEAP=FIRMWARE_MP_HEAP, BENCH_WORK=str(tmp_path / "work"))
    # The soak bounds every wait itself (a stall ends it, "stalled"); this is the last resort.
    proc = subprocess.run([sys.executable, "-m", "bench.soak", "--out", str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    summary = {k: result[k] for k in ("crashes", "lost", "duplicates", "unreadable_files", "stalled")}
    assert summary == {"crashes": 0, "lost": 0, "duplicates": 0, "unreadable_files": [],
                       "stalled": None}, (
        summary, result["lost_tags"], result["crash_details"], result["firmware_tail"][-30:])
    assert result["turns"] == 40 and result["answered"] + result["clear_errors"] == 40
    shares = result["turns_per_client"]
    assert sum(v for k, v in shares.items() if k.startswith("tg")) == 28  # 10 chats, 70 %
    assert sum(v for k, v in shares.items() if k.startswith("ws")) == 12  # 4 WebSocket clients
    assert result["answered"] >= 28  # the faults are a minority; most turns are real answers
    kinds = {k.split("_")[0] for k in result["faults"]}
    assert kinds == {"tg", "an"}, result["faults"]  # both fakes had faults
    offset, last_update = result["telegram_confirmed"]
    assert offset >= last_update  # Telegram heard every update answered
    assert all(w["max_used_kb"] for w in result["heap_line"]), result["heap_line"]
    assert "lost" in proc.stdout and "heap per window" in proc.stdout  # the table was printed
