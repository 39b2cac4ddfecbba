# The two runtimes every firmware test runs under, as commands.
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VENV_BIN = os.path.join(ROOT, ".venv", "bin")

# The heap the suite gives MicroPython: small enough to catch a turn that accumulates.
MP_HEAP = os.environ.get("MIMI_MP_HEAP", "512K")


def _find(name):
    path = os.path.join(_VENV_BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


MICROPYTHON = [_find("micropython") or "micropython", "-X", "heapsize=" + MP_HEAP]
CPYTHON = [sys.executable]
RUNTIMES = {"micropython": MICROPYTHON, "cpython": CPYTHON}
