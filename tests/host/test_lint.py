# The linter over every Python file, as its configuration (ruff.toml) says: pyflakes' checks and pycodestyle's
# errors and warnings, lines of at most 120 characters.
import os
import subprocess
import sys

from tests.runtimes import ROOT


def test_ruff_finds_nothing():
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    done = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
