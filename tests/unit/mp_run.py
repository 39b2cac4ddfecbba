# Runs unit test modules under the MicroPython unix port: every test_* function, like pytest does.
# Usage: micropython tests/unit/mp_run.py test_module [test_module ...]   (from the repository root)
import gc
import os
import sys

for _p in ("host_sim/standins", "firmware", "tests/unit"):
    sys.path.insert(0, _p)
for _name in os.listdir(".venv/lib"):  # microdot and other pure-Python firmware dependencies
    if _name.startswith("python3"):
        sys.path.append(".venv/lib/" + _name + "/site-packages")

passed = failed = 0
for name in sys.argv[1:]:
    if name.endswith(".py"):
        name = name.rsplit("/", 1)[-1][:-3]
    module = __import__(name)
    for attr in sorted(dir(module)):
        fn = getattr(module, attr)
        if not attr.startswith("test_") or not callable(fn):
            continue
        gc.collect()  # each test starts on a collected heap, as it would alone
        try:
            fn()
            passed += 1
            print("PASS", name, attr)
        except Exception as exc:  # a failing test is reported, the others still run
            failed += 1
            print("FAIL", name, attr)
            sys.print_exception(exc)
print("{} passed, {} failed".format(passed, failed))
sys.exit(1 if failed else 0)
