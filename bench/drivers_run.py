# Runs a driver script under a runtime and returns its result line as a dict.
import json
import subprocess

from bench.drivers.common import RESULT_MARK
from bench.setup import ROOT


def run_driver(cmd, script, *args, timeout=300):
    """cmd: the interpreter command (with its -X heapsize); script: bench/drivers/<name>.py."""
    proc = subprocess.run(cmd + ["bench/drivers/" + script] + [str(a) for a in args], cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, errors="replace")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    raise RuntimeError("{} gave no result (exit {}):\n{}".format(
        script, proc.returncode, (proc.stdout + proc.stderr)[-1500:]))
