# Runs a driver script under a runtime and returns its result line as a dict.
import json
import subprocess

import re

from bench.drivers.common import HOST_NAMES_MARK, RESULT_MARK
from bench.setup import ROOT


def run_driver(cmd, script, *args, timeout=300):
    """cmd: the interpreter command (with its -X heapsize); script: bench/drivers/<name>.py."""
    proc = subprocess.run(cmd + ["bench/drivers/" + script] + [str(a) for a in args], cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, errors="replace")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK):])
            names = re.search(HOST_NAMES_MARK + r"\s*\nqstr pool: [^\n]*n_total_bytes=(\d+)", proc.stdout)
            if names:  # common.mark_host(): the qstr pools the laptop side had made
                result["host_names"] = int(names.group(1))
            return result
    raise RuntimeError("{} gave no result (exit {}):\n{}".format(
        script, proc.returncode, (proc.stdout + proc.stderr)[-1500:]))
