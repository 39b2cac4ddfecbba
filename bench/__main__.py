# `make bench`: every figure of the benchmark suite -> bench/results.json and a table.
# The figures taken are merged into the file (bench/results.py): those taken again replace theirs, the rest stay.
#   python -m bench [--only figure,figure] [--out PATH]      (BENCH_QUICK=1: fewer repetitions)
import argparse
import os
import sys
import time
import traceback

from bench import (chat_apps, conversation, gateway, heap, hostile, machine, mcp, mqtt, photo, prompts, results,
                   rules, storage, telegram, tls, voice, wire)
from bench.report import GOALS, table, verdicts
from bench.setup import API_KEY, QUICK, ROOT, TIMING_HEAP, build_bundle, build_romfs, claim_work
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
    (("unauthenticated_heap",), hostile.measure),
    (("voice_turn_heap",), lambda fake, log: (voice.measure(fake, log),)),
    (("smallest_heap_tls", "idle_tls", "tls_cost"), tls.measure),  # per binary: MIMI_MICROPYTHON adds one
    (("idle_chat_apps", "turn_peak_chat_apps"), chat_apps.measure),  # per binary, as the TLS figures
    (("wire_formats",), wire.measure),
    (("prompt_tokens",), prompts.measure),
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
    try:
        results.load(args.out)  # refused now, not after minutes of measuring
    except results.Unreadable as e:
        parser.exit(1, "bench: {}: move it away or give --out; nothing was measured\n".format(e))
    claim_work()  # before anything in the work folder is made
    started = time.monotonic()
    log("building the .mpy bundle (tools/bundle.py -> build/bench-bundle-<pid>)")
    build_bundle()
    log("building the ROMFS image (tools/romfs.py -> build/bench-romfs-<pid>.img)")
    build_romfs()
    run = {"taken": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "machine": machine.describe(),
           "quick": QUICK, "timing_heap": TIMING_HEAP, "only": sorted(wanted) or None}
    figures, failed = {}, []
    fake = FakeAnthropic(api_key=API_KEY)
    fake.start()
    try:
        for names, measure in GROUPS:
            if wanted and not wanted.intersection(names):
                continue
            log("{} ...".format(", ".join(names)))
            t0 = time.monotonic()
            try:
                taken = tuple(measure(fake, log))
                if len(taken) != len(names):
                    raise ValueError("{} figures measured for {}".format(len(taken), len(names)))
            except Exception:  # the other groups still run, and what they took is kept
                traceback.print_exc()
                failed.extend(names)
                continue
            for name, figure in zip(names, taken):
                if not wanted or name in wanted:
                    figures[name] = figure
            log("  ({:.0f} s)".format(time.monotonic() - t0))
    finally:
        fake.stop()
    run["seconds"] = round(time.monotonic() - started, 1)
    try:
        held = results.load(args.out)  # read again: another run may have merged its figures meanwhile
    except results.Unreadable as e:
        aside = "{}.{}.json".format(args.out, run["taken"].replace(" ", "_").replace(":", ""))
        results.write(aside, results.merge({}, run, figures))
        print("bench: {}: this run's figures are in {}".format(e, os.path.relpath(aside)), file=sys.stderr)
        return 1
    merged = results.merge(held, run, figures)
    merged["verdicts"] = verdicts(merged["figures"])
    results.write(args.out, merged)
    print()
    print(table(merged))
    print("\nmerged into {} in {:.0f} s: {}".format(os.path.relpath(args.out), run["seconds"],
                                                  ", ".join(sorted(figures)) or "no figures"))
    if failed:
        print("bench: failed (see above; the file keeps their earlier figures): " + ", ".join(failed), file=sys.stderr)
        return 1
    lost = lost_turns(figures)
    if lost:
        print("bench: turns lost (their figures are short of runs): " + ", ".join(lost), file=sys.stderr)
        return 1
    return 0


def lost_turns(figure, where=""):
    """'name.form: N of failed_turns' for every run of this figure that lost a turn (failed_turns,
    failed_heap_turns above 0): a figure taken from fewer turns than it says is not what it claims."""
    found = []
    if isinstance(figure, dict):
        for key, value in figure.items():
            if key.startswith("failed_") and key.endswith("turns") and isinstance(value, int):
                if value:
                    found.append("{}: {} {}".format(where or "run", value, key))
            else:
                found.extend(lost_turns(value, "{}.{}".format(where, key) if where else key))
    return found


if __name__ == "__main__":
    sys.exit(main())
