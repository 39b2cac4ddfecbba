# Peak heap per turn: gc.mem_alloc() high-water above the idle baseline, 1 KB and 16 KB replies.
from bench.drivers_run import run_driver
from bench.setup import API_KEY, chat_replies, free_port, micropython, reps, runtime_command, standard_flash
from bench.stats import summary
from host_sim.fake_anthropic import text

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
