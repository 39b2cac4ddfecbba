# Runs a driver script under a runtime and returns its result line as a dict.
import json
import re
import subprocess

from bench.drivers.common import HOST_NAMES_MARK, RESULT_MARK
from bench.setup import ROOT


def pools_bytes(qstr_info_line):
    """The heap bytes of the qstr pools themselves in a micropython.qstr_info() line: n_total_bytes less
    n_str_data_bytes (the names' text: in the heap for names compiled from source, in the image for names of
    a module run from ROMFS, so it is not the pools' and it is not shared)."""
    total = int(re.search(r"n_total_bytes=(\d+)", qstr_info_line).group(1))
    text = int(re.search(r"n_str_data_bytes=(\d+)", qstr_info_line).group(1))
    return total - text


def run_driver(cmd, script, *args, timeout=300):
    """cmd: the interpreter command (with its -X heapsize); script: bench/drivers/<name>.py."""
    proc = subprocess.run(cmd + ["bench/drivers/" + script] + [str(a) for a in args], cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, errors="replace")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK):])
            names = re.search(HOST_NAMES_MARK + r"\s*\n(qstr pool: [^\n]*)", proc.stdout)
            if names:  # common.mark_host(): the qstr pools the laptop side had made
                result["host_names"] = pools_bytes(names.group(1))
            return result
    raise RuntimeError("{} gave no result (exit {}):\n{}".format(
        script, proc.returncode, (proc.stdout + proc.stderr)[-1500:]))
