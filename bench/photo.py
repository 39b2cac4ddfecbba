# Peak heap of a photo turn against a text turn: the 200 KB photo is streamed from flash, never held whole.
from bench.drivers_run import run_driver
from bench.heap import HEAP
from bench.setup import API_KEY, chat_replies, free_port, micropython, reps, runtime_command, standard_flash
from bench.stats import summary
from host_sim.fake_anthropic import text

PHOTO_BYTES = 200 * 1024
GOAL_KB = 16  # issue 14: a photo turn's peak within 16 KB of a text turn's


def _one(fake, runtime, n):
    fake.reset()
    chat_replies(fake, [text("Warmed up.")] + [text("A garden with tomatoes. " * 10, chunk=32)] * 3)
    flash = standard_flash("photo-{}-{}".format(runtime, n), sessions=("cli_console",))
    lib = runtime_command(runtime)[1]
    try:
        return run_driver(micropython(HEAP), "photo_heap.py", lib, flash, fake.url, API_KEY, free_port(),
                          PHOTO_BYTES)
    finally:
        fake.brain = None


def measure(fake, log, runtimes=("mpy", "romfs")):
    out = {"heap": HEAP, "photo_kb": PHOTO_BYTES // 1024, "goal_kb": GOAL_KB}
    for runtime in runtimes:
        runs = [_one(fake, runtime, n) for n in range(reps(3))]
        delta = summary([(r["photo_peak"] - r["text_peak"]) / 1024 for r in runs], 1)
        out[runtime] = {"text_peak_kb": summary([r["text_peak"] / 1024 for r in runs], 1),
                        "photo_peak_kb": summary([r["photo_peak"] / 1024 for r in runs], 1),
                        "photo_above_text_kb": delta, "failed_turns": len([r for r in runs if not r["ok"]])}
        log("  photo turn heap, {}: text turn peak {} KB, {} KB photo turn peak {} KB (+{} KB; goal {} KB)".format(
            runtime, out[runtime]["text_peak_kb"]["median"], PHOTO_BYTES // 1024,
            out[runtime]["photo_peak_kb"]["median"], delta["median"], GOAL_KB))
    return out
