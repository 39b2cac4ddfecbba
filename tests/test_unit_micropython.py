# Runs every tests/unit module under the MicroPython unix port too (pytest runs them under CPython).
import glob
import os
import subprocess

import pytest

from tests.runtimes import MICROPYTHON, ROOT

MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "tests/unit/test_*.py")))
# Unit modules that compile most of the firmware's sources on one heap (every command's module; the gateway, MCP
# server and every built-in tool), not a turn's memory: the unit heap (512K) left them at the mercy of where the
# compiler's garbage fell (test_gateway_limits passed at 512K and failed at 496K). The firmware's memory is
# measured in its compiled forms (the bench, the ROMFS e2e tests).
WHOLE_TREE = {"test_command_handlers": "1024K", "test_gateway_limits": "1024K",
              "test_settings_view": "1024K",  # the web app's views compiled, and every setting's row as JSON
              "test_console_secrets": "1024K"}  # every layer's commands imported (a fresh clone failed at 512K)


@pytest.mark.parametrize("module", MODULES)
def test_unit_module_under_micropython(module):
    command = list(MICROPYTHON)
    if module in WHOLE_TREE:
        command[command.index("-X") + 1] = "heapsize=" + WHOLE_TREE[module]
    proc = subprocess.run(
        command + ["tests/unit/mp_run.py", module],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "PASS" in proc.stdout, proc.stdout
