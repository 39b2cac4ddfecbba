# What every driver needs on both runtimes: the firmware on sys.path, a clock, a result line.
import json
import os
import sys

RESULT_MARK = "BENCH_RESULT "


def use_firmware(lib):
    """Put the firmware (a bundle's lib/ or firmware/) and the laptop stand-ins on sys.path."""
    sys.path.insert(0, lib)
    sys.path.insert(0, "host_sim/standins")
    venv_lib = ".venv/lib"
    try:
        for name in os.listdir(venv_lib):
            if name.startswith("python3"):
                sys.path.append(venv_lib + "/" + name + "/site-packages")  # microdot
    except OSError:
        pass


try:
    from time import ticks_diff, ticks_us

    def elapsed_us(start):
        return ticks_diff(ticks_us(), start)

    now_us = ticks_us
except ImportError:  # CPython
    from time import perf_counter_ns

    def now_us():
        return perf_counter_ns() // 1000

    def elapsed_us(start):
        return now_us() - start


def report(result):
    """One line the CPython side finds in the output, whatever else was printed."""
    print(RESULT_MARK + json.dumps(result))
