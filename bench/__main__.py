# `make bench`: every figure of the benchmark suite -> bench/results.json and a table.
#   python -m bench [--only figure,figure] [--out PATH]      (BENCH_QUICK=1: fewer repetitions)
import argparse
import json
import os
import sys
import time

from bench import conversation, gateway, heap, machine, mcp, mqtt, photo, rules, storage, telegram, tls, voice
from bench.report import GOALS, table, verdicts
from bench.setup import API_KEY, QUICK, ROOT, TIMING_HEAP, build_bundle, build_romfs
from host_sim.fake_anthropic import FakeAnthropic

# Each group of figures, and the function measuring them (given the fake and a logger).
GROUPS = (
    (("smallest_heap",), conversation.measure_heap),
    (("prompt_cache",), conversation.measure_cache),
    (("peak_heap_per_turn",), lambda fake, log: (heap.measure(fake, log),)),
    (("photo_turn_heap",), lambda fake, log: (photo.measure(fake, log),)),
    (("firmware_overhead", "token_relay", "throughput"), gateway.measure),
    (("boot_to_ready", "telegram_first_text"), telegram.measure),
    (("history_load",), lambda fake, log: (storage.history_load(log),)),
    (("sse_parsing",), lambda fake, log: (storage.sse_parsing(log),)),
    (("mqtt_in_to_out",), mqtt.measure),
    (("local_rules",), lambda fake, log: (rules.measure(fake, log),)),
    (("mcp_round_trip", "mcp_session_heap"), mcp.measure),
    (("voice_turn_heap",), lambda fake, log: (voice.measure(fake, log),)),
    (("smallest_heap_tls", "idle_tls", "tls_cost"), tls.measure),  # per binary: MIMI_MICROPYTHON adds one
)


def log(line):
    print(line, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Benchmarks of the firmware (see BENCHMARKS.md)")
    parser.add_argument("--only", default="", help="comma-separated figures (default: all)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results.json"))
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.only.split(",")))
    unknown = wanted - set(GOALS)
    if unknown:
        parser.error("unknown figures: {} (known: {})".format(", ".join(sorted(unknown)),
                                                                ", ".join(GOALS)))
    started = time.monotonic()
    log("building the .mpy bundle (tools/bundle.py -> build/bench-bundle-<pid>)")
    build_bundle()
    log("building the ROMFS image (tools/romfs.py -> build/bench-romfs-<pid>.img)")
    build_romfs()
    results = {"machine": machine.describe(), "quick": QUICK, "timing_heap": TIMING_HEAP,
               "taken": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "figures": {}}
    fake = FakeAnthropic(api_key=API_KEY)
    fake.start()
    try:
        for names, measure in GROUPS:
            if wanted and not wanted.intersection(names):
                continue
            log("{} ...".format(", ".join(names)))
            t0 = time.monotonic()
            for name, figure in zip(names, measure(fake, log)):
                if not wanted or name in wanted:
                    results["figures"][name] = figure
            log("  ({:.0f} s)".format(time.monotonic() - t0))
    finally:
        fake.stop()
    results["verdicts"] = verdicts(results["figures"])
    results["seconds"] = round(time.monotonic() - started, 1)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    print()
    print(table(results))
    print("\nwritten to {} in {:.0f} s".format(os.path.relpath(args.out), results["seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
