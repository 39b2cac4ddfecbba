# The soak at the chip's heap (issue 25): SOAK_FORM=romfs runs the ROMFS form over TLS (both fakes on https, the
# test CA on the flash image) in small-board mode, at the smallest heap the bench found plus 15 %.
import base64
import json
import math
import os
import re

from bench.setup import ROOT, WORK, build_romfs
from host_sim import lfs_flash

FORM = os.environ.get("SOAK_FORM") or os.environ.get("SOAK_RUNTIME") or "mpy"
TLS = (os.environ.get("SOAK_TLS") or ("1" if FORM == "romfs" else "0")) == "1"
SMALL_BOARD = (os.environ.get("SOAK_SMALL_BOARD") or ("1" if FORM == "romfs" else "0")) == "1"
MARGIN = 0.15  # of the firmware's own heap, on top of the smallest heapsize the chat passed at
HEAP_STEP_KB = 8
RESULTS = os.path.join(ROOT, "bench", "results.json")
FALLBACK_HEAP = "1024K"  # as tests/runtimes.py FIRMWARE_MP_HEAP (RELIABILITY.md)


def heap():
    """SOAK_HEAP, else for the ROMFS form the bench's smallest_heap_tls (this binary, TLS, small-board mode or
    not as the soak runs) plus MARGIN of the firmware's part of it, in 8 KB steps; else 1024K. (heap, why)."""
    if os.environ.get("SOAK_HEAP"):
        return os.environ["SOAK_HEAP"], "SOAK_HEAP"
    if FORM != "romfs":
        return FALLBACK_HEAP, "the roomy form's"
    try:
        with open(RESULTS) as f:
            figures = json.load(f)["figures"]["smallest_heap_tls"]["micropython"]
    except (OSError, KeyError, ValueError):
        return FALLBACK_HEAP, "no smallest_heap_tls in bench/results.json yet (make bench BENCH_ONLY=smallest_heap_tls)"
    found = figures["tls_small_board" if SMALL_BOARD else "tls"]
    if not found.get("kb") or found.get("kb_firmware") is None:
        return FALLBACK_HEAP, "bench/results.json has no passing smallest_heap_tls"
    kb = found["kb"] + MARGIN * found["kb_firmware"]
    kb = int(math.ceil(kb / HEAP_STEP_KB) * HEAP_STEP_KB)
    return "{}K".format(kb), "smallest_heap_tls {} KB (firmware {} KB) + 15 % of the firmware's".format(
        found["kb"], found["kb_firmware"])


def prepare(image_path, image_size, flash_dir):
    """Before the first boot: the ROMFS image built; small-board mode set in NVS (as a board without PSRAM
    chooses it at boot: the mode's boot work runs, board_names.py); with TLS a throwaway CA made, its
    certificate put on a fresh flash image (data/certs/test_ca.der) and its server context returned (else None)."""
    if FORM == "romfs":
        build_romfs()
    if SMALL_BOARD:
        os.makedirs(flash_dir, exist_ok=True)
        with open(os.path.join(flash_dir, "nvs.json"), "w") as f:  # the esp32 stand-in's NVS
            json.dump({"system": {"small_board": ["blob", base64.b64encode(b"on").decode()]}}, f)
    if not TLS:
        return None
    from tests.certs import make_test_ca, server_context

    folder = os.path.join(WORK, "soak-ca")
    os.makedirs(folder, exist_ok=True)
    paths = make_test_ca(folder)
    with open(paths["ca.der"], "rb") as f:
        lfs_flash.put_files(image_path, lfs_flash.parse_size(image_size), {"data/certs/test_ca.der": f.read()})
    return server_context(paths)


def resets_and_memory_errors(output):
    """From every firmware process's console output: the resets (the runner's '--- reset ---' after
    machine.reset, a watchdog's or a crash's) and the lines naming a MemoryError, the first few of them."""
    resets = len(re.findall(r"^--- reset ---", output, re.M))
    lines = [line for line in output.splitlines() if "MemoryError" in line or "memory allocation failed" in line]
    return resets, len(lines), lines[:10]
