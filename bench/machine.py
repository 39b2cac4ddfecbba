# What the benchmarks ran on: CPU, cores, runtime versions, so results can be compared honestly.
import os
import platform
import subprocess

from bench.setup import MICROPYTHON_BIN


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _micropython_version():
    try:
        out = subprocess.run([MICROPYTHON_BIN, "-c", "import sys; print(sys.version)"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def describe():
    return {
        "cpu": _cpu_model(),
        "nproc": os.cpu_count(),
        "os": "{} {}".format(platform.system(), platform.release()),
        "cpython": platform.python_version(),
        "micropython": _micropython_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],  # other work on the machine
    }
