# pytest (CPython) side of the unit tests: the same import paths mp_run.py gives MicroPython.
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in ("tests/unit", "firmware", "host_sim/standins"):
    _full = os.path.join(_ROOT, _p)
    if _full not in sys.path:
        sys.path.insert(0, _full)
