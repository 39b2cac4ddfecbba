# Peak heap per turn: gc.mem_alloc() high-water above the idle baseline, 1 KB and 16 KB replies; and the heap
# ratchet: the 10-turn chat at the fixed heap of bench/heap_budget.json and the idle heap after it, against it.
#   python -m bench.heap [--binary PATH] [--form romfs|mpy] [--heap KB]   (the ratchet's figures: a RATCHET line each)
import argparse
import json
import os
import sys

from bench import conversation
from bench.drivers_run import run_driver
from bench.setup import (API_KEY, binary_name, build_bundle, build_romfs, chat_replies, claim_work, free_port,
                         image_heap_bytes, micropython, reps, runtime_command, standard_flash)
from bench.stats import summary
from host_sim.fake_anthropic import FakeAnthropic, text

REPLY_SIZES = (1024, 16 * 1024)
HEAP = "1024K"  # roomy, so the figure is what a turn uses, not what a tight heap forces


def _one(fake, runtime, size, n):
    fake.reset()
    chat_replies(fake, [text("Warmed up."), text(("All about the garden. " * (size // 22 + 1))[:size],
                                                 chunk=32)])
    flash = standard_flash("peak-{}-{}-{}".format(runtime, size, n), sessions=("cli_console",))
    lib = runtime_command(runtime)[1]
    try:
        return run_driver(micropython(HEAP), "heap_turn.py", lib, flash, fake.url, API_KEY,
                          free_port())
    finally:
        fake.brain = None


def firmware_idle(run):
    """The idle heap the firmware holds: all that is allocated at idle, less what the laptop side held before
    the firmware's first import (common.mark_host: the ROMFS images, the stand-ins for the chip's C modules,
    the driver), its qstr pools excepted (the firmware's names go on in them, so they count as its own)."""
    return run["idle"] + run["image"] - (run["host"] - run.get("host_names", 0))


def measure(fake, log):
    out = {"heap": HEAP}
    for runtime in ("mpy", "py", "romfs"):  # romfs: the image's own bytes are subtracted (drivers/common.py)
        figures = {}
        for size in REPLY_SIZES:
            runs = [_one(fake, runtime, size, n) for n in range(reps(3))]
            bad = [r for r in runs if not r["ok"]]
            figures["reply_{}k".format(size // 1024)] = dict(
                summary([r["above_idle"] / 1024 for r in runs], 1),
                goal_kb=round(3 * size / 1024 + 24, 1), failed_turns=len(bad))
            figures["idle_kb"] = summary([firmware_idle(r) / 1024 for r in runs], 1)
            figures["idle_with_host_kb"] = summary([r["idle"] / 1024 for r in runs], 1)  # images not counted
            figures["samples"] = runs[-1]["samples"]
            last = runs[-1]
            figures["image_kb"] = round(last.get("image", 0) / 1024, 1)
            figures["host_kb"] = round((last["host"] - last.get("host_names", 0) - last["image"]) / 1024, 1)
            figures["standins_kb"] = round(last.get("standins", 0) / 1024, 1)  # of host_kb
        log("  peak heap per turn, {}: idle {} KB ({} KB with the laptop side's {} KB), 1 KB reply +{} KB, "
            "16 KB reply +{} KB".format(runtime, figures["idle_kb"]["median"],
                                        figures["idle_with_host_kb"]["median"], figures["host_kb"],
                                        figures["reply_1k"]["median"], figures["reply_16k"]["median"]))
        out[runtime] = figures
    return out


# The ratchet (tests/host/test_heap_ratchet.py, in `make test`): per form and MicroPython binary, the 10-turn chat
# at a fixed heap and the idle heap after it, firmware only, held to the figures of one file. A change that grows
# the heap fails it, and raises the figure there, with its reason, in the same commit.
BUDGET_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "heap_budget.json")
RATCHET_MARK = "RATCHET "
RATCHET_FORMS = ("romfs", "mpy")


def budget(path=BUDGET_FILE):
    with open(path) as f:
        return json.load(f)


def ratchet_heap_kb(form, figures):
    """The chat's heapsize: the budget's, plus the ROMFS images in that form (the unix port holds them in its heap;
    on the chip they are flash), whole KB."""
    extra = (image_heap_bytes() + 1023) // 1024 if form == "romfs" else 0
    return figures["chat_heap_kb"]["budget"] + extra


def ratchet(fake, form, binary=None, heap_kb=None, path=BUDGET_FILE):
    """One form's ratchet figures under a binary (None: the default MicroPython): the chat at the budget's heap
    (heap_kb: at this heapsize instead), then idle after it as the bench takes it (conversation.idle_after_chat:
    heap_info after a collection, less what the laptop side held before the firmware started;
    MIMI_SIM_HOST_HEAP=1). idle_kb is None when the chat failed (why says how); board: the firmware's board
    lines (the mode it chose, what its boot did with the names)."""
    name = binary_name(binary)
    figures = budget(path)["forms"][form][name]
    heap_kb = heap_kb or ratchet_heap_kb(form, figures)
    host = {}
    got = conversation.idle_after_chat(fake, form, "{}K".format(heap_kb), binary, host=host)
    return {"form": form, "binary": name, "heap_kb": heap_kb, "idle_kb": got["kb_firmware"],
            "idle_with_host_kb": got.get("kb_with_host"), "why": got.get("why"), "board": host.get("board"),
            "chat_heap_kb": figures["chat_heap_kb"]["budget"], "idle_budget_kb": figures["idle_kb"]["budget"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description="The heap ratchet's figures (bench/heap_budget.json)")
    parser.add_argument("--binary", default=None, help="another MicroPython (its figures: its file name's)")
    parser.add_argument("--form", action="append", choices=RATCHET_FORMS, help="default: every form")
    parser.add_argument("--heap", type=int, default=None, help="heapsize in KB, images included (default: the "
                        "budget's)")
    args = parser.parse_args(argv)
    forms = args.form or RATCHET_FORMS
    claim_work()
    build_bundle()
    if "romfs" in forms:
        build_romfs()
    fake = FakeAnthropic(api_key=API_KEY)
    fake.start()
    try:
        for form in forms:
            print(RATCHET_MARK + json.dumps(ratchet(fake, form, args.binary, args.heap)), flush=True)
    finally:
        fake.stop()


if __name__ == "__main__":
    sys.exit(main())
