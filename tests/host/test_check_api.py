# `make check-api`: firmware/ uses only what the ESP32-S3 port has; CPython-only calls fail.
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK_API = [sys.executable, os.path.join(ROOT, "tools", "check_api.py")]

# Each line marked "# BAD" must be reported; everything else must pass. (os.makedirs is not
# caught: the published stubs' os module is CPython's typeshed one.)
PROBE = '''\
import json
import os
import time

try:
    from micropython import const
except ImportError:  # CPython fallback: accepted
    import traceback

    def const(value):
        return value

if hasattr(time, "ticks_ms"):
    ticks_ms = time.ticks_ms
else:  # CPython fallback: accepted
    def ticks_ms():
        return time.monotonic_ns() // 1000000

try:
    import gc

    mem_free = gc.mem_free
except AttributeError:  # accepted
    mem_free = None


def chip_calls():
    time.sleep_ms(1)
    os.stat("/")[6]
    json.dumps({"a": 1}, separators=(",", ":"))


def laptop_calls():
    time.monotonic_ns()  # BAD
    os.path.join("a", "b")  # BAD
    json.dumps({}, indent=2)  # BAD
    time.no_such_function()  # BAD


try:
    import dataclasses  # BAD: only ImportError/AttributeError handlers are fallbacks
except ValueError:
    pass
'''


def check(root):
    return subprocess.run(CHECK_API + ["--root", str(root)], cwd=ROOT, capture_output=True,
                          text=True)


def test_the_firmware_uses_only_the_s3_api():
    result = check(os.path.join(ROOT, "firmware"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "uses only what the ESP32-S3 port has" in result.stdout
    assert "$ " in result.stdout  # the command it ran is shown


def test_calls_the_s3_port_lacks_fail_outside_fallbacks(tmp_path):
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("")
    (tmp_path / "probe" / "calls.py").write_text(PROBE)
    result = check(tmp_path)
    assert result.returncode != 0
    bad = {n for n, line in enumerate(PROBE.splitlines(), 1) if "# BAD" in line}
    reported = {int(line.split(":")[1]) for line in result.stdout.splitlines()
                if line.startswith("probe/calls.py:")}
    assert reported == bad, result.stdout
    assert "does not have" in result.stderr
