# The standard 10-turn conversation, the smallest heap it completes in, and prompt cache stability.
import json
import os
import re
import time

from bench.setup import Firmware, chat_replies, chat_requests, free_port, fresh_dir, image_heap_bytes, standard_flash
from host_sim.fake_anthropic import text, tool_use

# Reply sizes (characters) of the ten turns: up to 4 KB; turn 3 first calls a tool.
REPLY_SIZES = (600, 4096, 1500, 3000, 4096, 256, 2500, 4096, 800, 3500)
TOOL_TURN = 2
HEAP_STEP_KB = 8
HEAP_LOW_KB = 64  # assumed too small; checked
HEAP_HIGH_KB = 1024  # assumed enough; checked
TURN_TIMEOUT_S = 60
IDLE_SETTLE_S = 2
IDLE_READINGS = 2  # of heap_info, IDLE_SETTLE_S apart (a loaded machine may still run the last turn's after-steps)
# A firmware log line ("name: ...") that comes while a reply streams gets a line of its own on the console, and
# the reply goes on below on a fresh "mimi: " line; both are taken out before the reply is compared.
_LOG_LINE = re.compile(r"(?:health|clock|gateway|WiFi|tools|agent|cron|heartbeat|safety|Telegram): [^\n]*\n")


def _reply_text(turn, size):
    head = "Reply {} begins. ".format(turn)
    tail = " Reply {} ends.".format(turn)
    body = "Plain words about the garden and the weather, nothing more. "
    filler = (body * (size // len(body) + 1))[:size - len(head) - len(tail)]
    return head + filler + tail


def script(fake):
    """Queue the conversation's replies on the fake; returns the texts the user must see
    (on the tool turn, the text after the tool round)."""
    expected, replies = [], []
    for turn, size in enumerate(REPLY_SIZES):
        reply = _reply_text(turn, size)
        if turn == TOOL_TURN:
            replies.append(tool_use("get_current_time", {}, text="Let me look at the clock."))
        expected.append(reply)
        replies.append(text(reply, chunk=32))
    chat_replies(fake, replies)
    return expected


NAMES_SHORT = "board: no memory to intern the names"  # firmware/mimi/board_names.py: a heap too small for them


def run_conversation(fake, runtime, heap, name, host=None, binary=None, extra=(), prepare=None, idle=None):
    """Boot the firmware, hold the ten turns over the console; (ok, why, requests, seconds). `host` (a dict)
    gets "bytes", "images" and "names": the laptop side's heap before the firmware started, and of it the
    ROMFS images and the qstr pools (Firmware.host_heap()). binary: another MicroPython; extra: more run.py
    arguments; prepare: standard_flash's; idle (a dict): "used", the heap held after the chat (heap_info). `host`
    also gets "board": the firmware's board: lines (the mode it chose, what its boot did with the names)."""
    fake.reset()
    expected = script(fake)
    flash = standard_flash(name, sessions=("cli_console",), prepare=prepare)
    started = time.monotonic()
    firmware = Firmware(runtime, flash, "--anthropic-api", fake.url, "--ws-port", free_port(), *extra,
                        heap=heap, binary=binary)
    try:
        try:
            firmware.ready()
            if NAMES_SHORT in firmware.output:  # small-board mode's boot could not make room for every feature
                return False, firmware.output[firmware.output.find(NAMES_SHORT):][:120], [], \
                    time.monotonic() - started
            for turn, reply in enumerate(expected):
                out = firmware.command("chat Tell me part {} please".format(turn), TURN_TIMEOUT_S)
                out = _LOG_LINE.sub("", out)
                if reply not in out.replace("\nmimi: ", "") or "mimi: " not in out:
                    why = "turn {}: the reply was not shown whole: {!r}".format(turn, out[-300:])
                    return False, why, fake.requests, time.monotonic() - started
        except (RuntimeError, TimeoutError) as exc:
            return False, str(exc).splitlines()[0], chat_requests(fake.requests), time.monotonic() - started
        requests = chat_requests(fake.requests)
        bad = [r for r in fake.requests if r["status"] != 200]
        if len(requests) != len(REPLY_SIZES) + 1 or bad:
            return False, "{} requests, {} refused".format(len(requests), len(bad)), requests, \
                time.monotonic() - started
        if idle is not None:
            readings = []
            for _ in range(IDLE_READINGS):  # the least: a reading taken while an after-step still ran is not idle
                time.sleep(IDLE_SETTLE_S)  # the turn's after-steps done, the long poll (if any) open again
                used = re.search(r"heap: \d+ bytes free, (\d+) used", firmware.command("heap_info"))
                readings += [int(used.group(1))] if used else []
            idle["used"] = min(readings) if readings else None
        saved = _last_saved(flash)
        if saved != expected[-1]:
            return False, "the session does not end with the last reply", requests, \
                time.monotonic() - started
        return True, "", requests, time.monotonic() - started
    finally:
        if host is not None:
            host["bytes"], host["images"], host["names"] = firmware.host_heap() or (None, None, None)
            host["board"] = [line for line in firmware.output.splitlines() if line.startswith("board: ")]
        firmware.stop()
        fake.brain = None


def _last_saved(flash):
    path = os.path.join(flash, "data", "sessions", "cli_console.jsonl")
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return json.loads(lines[-1])["content"] if lines else None


def idle_after_chat(fake, runtime, heap, binary=None, extra=(), prepare=None, host=None):
    """The heap the firmware holds at idle after the 10-turn chat (heap_info after a collection), the laptop
    side's share subtracted as smallest_heap does (its qstr pools counted as the firmware's). host: a dict given
    gets run_conversation's."""
    host, idle = {} if host is None else host, {}
    ok, why, _, _ = run_conversation(fake, runtime, heap, "idle-{}".format(runtime), host, binary, extra, prepare,
                                     idle)
    if not ok or not idle.get("used") or not host.get("bytes"):
        return {"kb_firmware": None, "why": why or "no heap_info line"}
    firmware = idle["used"] - (host["bytes"] - host["names"])
    return {"kb_firmware": round(firmware / 1024, 1), "kb_with_host": round(idle["used"] / 1024, 1), "heap": heap}


def smallest_heap(fake, runtime, log, binary=None, extra=(), prepare=None, low_kb=HEAP_LOW_KB):
    """Bisection in 8 KB steps between low_kb (fails) and HEAP_HIGH_KB (passes)."""
    tries = []

    def attempt(kb):
        host = {}
        ok, why, _, seconds = run_conversation(fake, runtime, "{}K".format(kb),
                                               "heap-{}-{}".format(runtime, kb), host, binary, extra, prepare)
        tries.append({"heap_kb": kb, "ok": ok, "why": why, "seconds": round(seconds, 1),
                      "host_bytes": host.get("bytes"), "image_bytes": host.get("images"),
                      "names_bytes": host.get("names")})
        log("    {} heapsize={}K: {}".format(runtime, kb, "ok" if ok else "FAILED " + why[:120]))
        return ok

    low, high = low_kb // HEAP_STEP_KB, HEAP_HIGH_KB // HEAP_STEP_KB
    if not attempt(high * HEAP_STEP_KB):
        return {"kb": None, "note": "failed even at {} KB".format(HEAP_HIGH_KB), "tries": tries}
    if attempt(low * HEAP_STEP_KB):
        return {"kb": low_kb, "note": "passed at the lowest size tried", "tries": tries}
    while high - low > 1:
        mid = (low + high) // 2
        if attempt(mid * HEAP_STEP_KB):
            high = mid
        else:
            low = mid
    result = {"kb": high * HEAP_STEP_KB, "tries": tries}
    passed = [t for t in tries if t["ok"] and t["heap_kb"] == result["kb"] and t["host_bytes"]]
    if passed:  # the laptop side's share of that heap: not on the chip (BENCHMARKS.md "Memory by form")
        run = passed[-1]
        host = run["host_bytes"] - run["names_bytes"]  # the qstr pools count as the firmware's
        result["host_kb"] = round(host / 1024, 1)
        result["host_image_kb"] = round(run["image_bytes"] / 1024, 1)
        result["kb_firmware"] = round(result["kb"] - host / 1024, 1)
    return result


def cache_stability(requests):
    """Share of requests whose system prompt and tools equal the previous request's, byte for
    byte (compared as compact JSON in the order sent: key order and values must match)."""
    bodies = [r["body"] for r in requests if isinstance(r.get("body"), dict)]
    prefixes = [json.dumps([b.get("system"), b.get("tools")], separators=(",", ":"),
                           ensure_ascii=False) for b in bodies]
    pairs = list(zip(prefixes, prefixes[1:]))
    same = sum(1 for a, b in pairs if a == b)
    usage_note = "{} of {} requests compared".format(len(pairs), len(bodies))
    return {"share": round(same / len(pairs), 4) if pairs else None, "identical": same,
            "compared": len(pairs), "prefix_bytes": len(prefixes[0]) if prefixes else None,
            "note": usage_note}


def measure_heap(fake, log):
    """The smallest_heap figure: the .mpy bundle, the .py sources and the ROMFS image under MicroPython.

    The ROMFS run's -X heapsize holds the images (read into RAM); kb_without_image subtracts their cost.
    kb_firmware subtracts all the laptop side held before the firmware started (host_kb: the images, the
    stand-ins for the chip's C modules, run.py and its helpers), measured in the same run."""
    fresh_dir("heap")
    heap = {}
    for runtime in ("mpy", "py", "romfs"):
        log("  smallest heap, {}".format(runtime))
        heap[runtime] = smallest_heap(fake, runtime, log)
    image = image_heap_bytes()
    heap["romfs"]["image_kb"] = round(image / 1024, 1)
    if heap["romfs"].get("kb"):
        heap["romfs"]["kb_without_image"] = round(heap["romfs"]["kb"] - image / 1024, 1)
    return (heap,)


def measure_cache(fake, log):
    """The prompt_cache figure, from the requests of the conversation (.mpy bundle, CPython)."""
    cache = {}
    for runtime in ("mpy", "cpython"):
        ok, why, requests, _ = run_conversation(fake, runtime, "1024K", "cache-" + runtime)
        result = cache_stability(requests)
        result["conversation_ok"] = ok
        if not ok:
            result["why"] = why
        cache[runtime] = result
        log("  prompt cache, {}: {}".format(runtime, result["note"]))
    return (cache,)
