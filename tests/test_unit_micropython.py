# Runs every tests/unit module under the MicroPython unix port too (pytest runs them under CPython).
import glob
import os
import subprocess

import pytest

from tests.runtimes import MICROPYTHON, ROOT

MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "tests/unit/test_*.py")))


@pytest.mark.parametrize("module", MODULES)
def test_unit_module_under_micropython(module):
    proc = subprocess.run(
        MICROPYTHON + ["tests/unit/mp_run.py", module],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " 0 failed" in proc.stdout and "PASS" in proc.stdout, proc.stdout
