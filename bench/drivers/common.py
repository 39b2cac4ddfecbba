# What every driver needs on both runtimes: the firmware on sys.path, a clock, a result line.
import json
import os
import sys

RESULT_MARK = "BENCH_RESULT "


STANDINS_IMAGE = "build/standins-romfs.img"  # bench/setup.py build_romfs makes it (host_sim/standins_rom.py)
IMAGE_COST = [0]  # heap bytes the ROMFS image itself takes (read into RAM here; mapped flash on the chip)
# Heap bytes importing the stand-ins for the chip's built-in modules takes (their module dicts, functions and
# classes): reported beside the figures, which still count them. On the chip these are C modules in flash.
STANDINS = ("machine", "network", "esp32", "esp32_ota", "ntptime")
STANDINS_COST = [0]
# Heap the laptop side holds before the firmware's first import (mark_host): the images, the stand-ins, this
# driver and its helpers; none of it is on the chip. Its qstr pools are printed after HOST_NAMES_MARK for the
# CPython side (drivers_run.py): the firmware's names go on in those pools, so their bytes count as its own.
HOST_COST = [0]
HOST_NAMES_MARK = "BENCH_HOST_NAMES"


def import_standins():
    import gc

    gc.collect()
    before = gc.mem_alloc()
    for name in STANDINS:
        __import__(name)
    gc.collect()
    STANDINS_COST[0] = gc.mem_alloc() - before


def use_romfs(image):
    """Mount a ROMFS image at /rom with vfs.VfsRom (MicroPython) and import the firmware from it.

    The image is read into one bytes object first, and the stand-ins' own image (the chip's built-in
    modules) mounted beside it; their cost is measured as the gc.mem_alloc() delta of those reads, and
    the heap figures subtract it (IMAGE_COST)."""
    import gc
    import vfs

    sys.path.insert(0, "host_sim")
    import standins_rom

    gc.collect()
    before = gc.mem_alloc()
    with open(image, "rb") as f:
        data = f.read()
    vfs.mount(vfs.VfsRom(data), "/rom")
    sys.path.insert(0, "/rom/lib")
    standins_rom.mount(STANDINS_IMAGE)  # the chip's built-in modules: C in flash there
    gc.collect()
    IMAGE_COST[0] = gc.mem_alloc() - before
    import_standins()


def use_firmware(lib):
    """Put the firmware (a bundle's lib/, firmware/ or "romfs:<image>") and the laptop stand-ins on sys.path."""
    if lib.startswith("romfs:"):
        return use_romfs(lib[len("romfs:"):])
    sys.path.insert(0, "host_sim")
    import board_lib

    board_lib.use(lib)  # at /lib, as on the board: the heap does not depend on the checkout's path
    sys.path.insert(0, "host_sim/standins")
    if sys.implementation.name == "micropython":
        import_standins()
    venv_lib = ".venv/lib"
    try:
        for name in os.listdir(venv_lib):
            if name.startswith("python3"):
                sys.path.append(venv_lib + "/" + name + "/site-packages")  # microdot
    except OSError:
        pass


def mark_host():
    """Call after use_firmware() and before the firmware's first import (asyncio included: the chip's is
    frozen into the firmware, and the firmware imports it)."""
    import gc

    gc.collect()
    HOST_COST[0] = gc.mem_alloc()
    if sys.implementation.name == "micropython":
        import micropython

        print(HOST_NAMES_MARK)
        micropython.qstr_info()  # "qstr pool: ... n_total_bytes=N"


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


class Sampler:
    """Collects and reads gc.mem_alloc() at every pass of the scheduler; keeps the highest."""

    def __init__(self):
        self.peak = 0
        self.samples = 0
        self.running = True

    async def run(self):
        import asyncio
        import gc

        while self.running:
            gc.collect()
            used = gc.mem_alloc()
            if used > self.peak:
                self.peak = used
            self.samples += 1
            await asyncio.sleep(0)


def report(result):
    """One line the CPython side finds in the output, whatever else was printed."""
    print(RESULT_MARK + json.dumps(result))
