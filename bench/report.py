# The goals, whether each figure meets them, and the printed results table.
from bench.results import taken_by


GOALS = {
    "smallest_heap": "ROMFS, the laptop side not counted: at most 256 KB (issue 12)",
    "peak_heap_per_turn": "ROMFS, the laptop side not counted: idle at most 160 KB, peak at most 3x the reply "
                          "size + 24 KB above it",
    "firmware_overhead": "10 ms or less",
    "token_relay": "p50 2 ms, p99 10 ms",
    "telegram_first_text": "under 1.2 s",
    "throughput": "100 turns/s or more",
    "history_load": "100k lines within 1.5x of 100 lines",
    "sse_parsing": "report",
    "boot_to_ready": "500 ms or less",
    "prompt_cache": "100%",
    "mqtt_in_to_out": "report (a real Mosquitto on loopback, instant fake brain)",
    "photo_turn_heap": "a 200 KB photo turn's peak heap within 16 KB of a text turn's (issue 14)",
    "local_rules": "edge to action p99 <= 20 ms on MicroPython; 0 tokens a day for a rule (issue 21)",
    "mcp_round_trip": "report: a tools/call through the board's MCP server, p50/p99 (issue 22)",
    "mcp_session_heap": "report: the heap one MCP session holds, ROMFS form (issue 22)",
    "unauthenticated_heap": "the largest heap one unauthenticated connection holds under the header, body and "
                            "fragment attacks, ROMFS form: under 8 KB (issues 32, 41)",
    "voice_turn_heap": "a voice note turn's peak heap within 16 KB of a text turn's, ROMFS form; report the time "
                       "from the note to its transcript shown (issue 24)",
    "smallest_heap_tls": "report: the 10-turn chat's smallest heap with both fakes on https, ROMFS form, firmware "
                         "only, roomy and small-board mode, per MicroPython binary (issue 25)",
    "idle_tls": "report: the idle heap after that chat, Telegram's long poll open over TLS (issue 25)",
    "tls_cost": "report: the parsed CA certificates and one TLS session, per binary (issue 25)",
    "prompt_tokens": "a plain turn at most 1,200 tokens on a 4,096-token profile with the default files; on Claude at "
                     "most half of the uncached input before issue 44; the day at most half of its tokens (issue 44)",
    "idle_chat_apps": "report: the idle heap with each chat app on (Matrix, Discord; none; Telegram, Matrix and "
                      "Discord at once), everything over TLS, ROMFS form, firmware only, per binary (issue 45)",
    "turn_peak_chat_apps": "report: a turn's peak heap through that chat app, the same runs (issue 45)",
    "wire_formats": "a turn on an openai profile within 1 ms (overhead, .mpy) and 2 KB (peak, ROMFS) of a Claude "
                    "turn (issue 31)",
}
RUNTIME_NAMES = {"mpy": "MicroPython .mpy", "mpy_tight": "MicroPython .mpy, heap under 2 MB", "py": "MicroPython .py",
                 "romfs": "MicroPython ROMFS", "cpython": "CPython"}
HEAP_GOAL_KB = 256  # issue 12: the 10-turn chat on the ROMFS form, the images (and the laptop side) not counted
IDLE_GOAL_KB = 160


def _spread(s, unit=""):
    if not s or s.get("median") is None:
        return "n/a"
    if s.get("n", 0) <= 1:
        return "{}{}".format(s["median"], unit)
    return "{}{} [{}..{}]".format(s["median"], unit, s["p10"], s["p90"])


def _get(figures, name, runtime):
    return (figures.get(name) or {}).get(runtime) or {}


def verdicts(figures):
    """{figure: {"met": bool or None, "why": str}} judged on the unix port (.mpy bundle; heap: ROMFS)."""
    out = {}

    def judge(name, met, why):
        if name in figures:
            out[name] = {"goal": GOALS[name], "met": met, "why": why}

    heap = _get(figures, "smallest_heap", "romfs")
    judge("smallest_heap", heap.get("kb_firmware") is not None and heap["kb_firmware"] <= HEAP_GOAL_KB,
          "{} KB for the firmware ({} KB without the images only)".format(heap.get("kb_firmware"),
                                                                          heap.get("kb_without_image")))
    peak = _get(figures, "peak_heap_per_turn", "romfs")
    if peak:
        misses = [k for k in ("reply_1k", "reply_16k")
                  if (peak[k]["median"] or 1e9) > peak[k]["goal_kb"]]
        if (peak["idle_kb"]["median"] or 1e9) > IDLE_GOAL_KB:
            misses.append("idle")
        judge("peak_heap_per_turn", not misses, "over the goal: {}".format(
            ", ".join(misses) or "none"))
    photo_turn = _get(figures, "photo_turn_heap", "romfs") or _get(figures, "photo_turn_heap", "mpy")
    if photo_turn:
        above = photo_turn["photo_above_text_kb"]["median"]
        judge("photo_turn_heap", above is not None and above <= 16, "+{} KB above the text turn".format(above))
    voice_turn = _get(figures, "voice_turn_heap", "romfs") or _get(figures, "voice_turn_heap", "mpy")
    if voice_turn:
        above = voice_turn["voice_above_text_kb"]["median"]
        judge("voice_turn_heap", above is not None and above <= 16, "+{} KB above the text turn".format(above))
    over = _get(figures, "firmware_overhead", "mpy").get("overhead_ms", {})
    judge("firmware_overhead", over.get("median") is not None and over["median"] <= 10,
          "median {} ms".format(over.get("median")))
    relay = _get(figures, "token_relay", "mpy")
    judge("token_relay", relay.get("median") is not None and relay["median"] <= 2
          and relay["p99"] <= 10, "p50 {} ms, p99 {} ms".format(relay.get("median"),
                                                                relay.get("p99")))
    first = _get(figures, "telegram_first_text", "mpy").get("first_text_ms", {})
    judge("telegram_first_text", first.get("median") is not None and first["median"] < 1200,
          "median {} ms".format(first.get("median")))
    rate = _get(figures, "throughput", "mpy")
    judge("throughput", rate.get("median") is not None and rate["median"] >= 100,
          "median {} turns/s".format(rate.get("median")))
    hist = _get(figures, "history_load", "mpy")
    judge("history_load", hist.get("ratio_longest_to_100") is not None
          and hist["ratio_longest_to_100"] <= 1.5,
          "ratio {}".format(hist.get("ratio_longest_to_100")))
    wire = figures.get("wire_formats", {}).get("openai_minus_anthropic")
    if wire:
        judge("wire_formats", wire["overhead_ms"] is not None and wire["overhead_ms"] <= 1
              and wire["peak_kb"] is not None and wire["peak_kb"] <= 2,
              "openai - anthropic: overhead {} ms, peak {} KB".format(wire["overhead_ms"], wire["peak_kb"]))
    tokens = figures.get("prompt_tokens")
    if tokens:
        from bench.prompts import goals

        met, why = goals(tokens)
        judge("prompt_tokens", met, why)
    judge("sse_parsing", None, "reported only")
    judge("mqtt_in_to_out", None, "reported only")
    judge("mcp_round_trip", None, "reported only")
    judge("mcp_session_heap", None, "reported only")
    attack = _get(figures, "unauthenticated_heap", "romfs")
    if attack:
        judge("unauthenticated_heap", attack["largest_kb"] is not None and attack["largest_kb"] < 8,
              "{} KB".format(attack["largest_kb"]))
    boot = _get(figures, "boot_to_ready", "mpy").get("ready_ms", {})
    judge("boot_to_ready", boot.get("median") is not None and boot["median"] <= 500,
          "median {} ms".format(boot.get("median")))
    cache = _get(figures, "prompt_cache", "mpy")
    judge("prompt_cache", cache.get("share") == 1.0, "share {}".format(cache.get("share")))
    rule = _get(figures, "local_rules", "mpy").get("edge_to_action_ms", {})
    judge("local_rules", rule.get("p99") is not None and rule["p99"] <= 20
          and _get(figures, "local_rules", "mpy").get("rule_tokens_per_day") == 0,
          "p99 {} ms; rule tokens a day {}".format(rule.get("p99"),
                                                 _get(figures, "local_rules", "mpy").get("rule_tokens_per_day")))
    return out


def _rows(name, figure):
    """(runtime, value) pairs of one figure, for the table."""
    if name in ("smallest_heap_tls", "idle_tls", "tls_cost"):  # per MicroPython binary, ROMFS form
        from bench.tls import rows

        return rows(name, figure)
    if name in ("idle_chat_apps", "turn_peak_chat_apps"):  # per MicroPython binary and chat app, ROMFS form
        from bench.chat_apps import rows

        return rows(name, figure)
    if name == "prompt_tokens":  # per wire format and kind of request, and the day
        from bench.prompts import rows

        return rows(figure)
    if name == "wire_formats":  # per wire format: overhead on the .mpy bundle, peak heap on ROMFS
        return [("{} (.mpy; ROMFS)".format(wire), "overhead {}; peak +{} KB above idle {} KB".format(
            _spread(figure[wire]["overhead_ms"], " ms"), _spread(figure[wire]["peak_kb"]),
            figure[wire]["idle_kb"]["median"])) for wire in ("anthropic", "openai") if wire in figure]
    rows = []
    for runtime in ("mpy", "mpy_tight", "py", "romfs", "cpython"):
        f = figure.get(runtime)
        if not f:
            continue
        if name == "smallest_heap":
            value = "{} KB".format(f.get("kb")) if f.get("kb") else f.get("note", "n/a")
            if f.get("kb_firmware") is not None:
                value += " ({} KB for the firmware: the laptop side's {} KB not counted".format(
                    f["kb_firmware"], f["host_kb"])
                if f.get("kb_without_image") is not None:
                    value += "; {} KB without the {} KB of images only".format(f["kb_without_image"], f["image_kb"])
                value += ")"
        elif name == "peak_heap_per_turn":
            value = "1 KB reply +{} KB, 16 KB reply +{} KB (idle {} KB".format(
                _spread(f["reply_1k"]), _spread(f["reply_16k"]), f["idle_kb"]["median"])
            if f.get("host_kb") is not None:
                value += "; {} KB with the laptop side's {} KB: the stand-ins for the chip's built-in modules " \
                         "and the driver".format(f["idle_with_host_kb"]["median"], f["host_kb"])
            value += ")"
        elif name == "firmware_overhead":
            value = "{} (in {} + out {})".format(_spread(f["overhead_ms"], " ms"),
                                                f["inbound_ms"]["median"],
                                                f["outbound_ms"]["median"])
            if runtime == "mpy_tight" and figure.get("reloads_ms") is not None:
                value += "; on a heap under 2 MB the clients' code is loaded for each call: +{} ms a turn".format(
                    figure["reloads_ms"])
        elif name == "token_relay":
            value = "p50 {} ms, p99 {} ms (n={})".format(f["median"], f["p99"], f["n"])
        elif name == "telegram_first_text":
            value = "{} (generation {} ms)".format(_spread(f["first_text_ms"], " ms"),
                                                  f["generation_ms"]["median"])
        elif name == "throughput":
            value = _spread(f, " turns/s")
        elif name == "history_load":
            lengths = [k for k in f if k.isdigit()]
            value = ", ".join("{}: {}".format(k, _spread(f[k], " ms")) for k in lengths)
            value += "; ratio {}".format(f["ratio_longest_to_100"])
        elif name == "sse_parsing":
            value = _spread(f, " MB/s")
        elif name == "mqtt_in_to_out":
            value = _spread(f, " ms")
        elif name == "boot_to_ready":
            value = "{} (gateway {}, poller {})".format(_spread(f["ready_ms"], " ms"),
                                                       f["gateway_ms"]["median"],
                                                       f["poller_ms"]["median"])
        elif name == "photo_turn_heap":
            value = "photo turn +{} KB above the text turn (text turn peak {} KB)".format(
                _spread(f["photo_above_text_kb"]), f["text_peak_kb"]["median"])
        elif name == "voice_turn_heap":
            value = "voice turn +{} KB above the text turn (text turn peak {} KB); note to transcript {}".format(
                _spread(f["voice_above_text_kb"]), f["text_peak_kb"]["median"], _spread(f["to_transcript_ms"], " ms"))
        elif name == "local_rules":
            value = ("edge to action p50 {} ms, p99 {} ms; an edge allocates {} B; 16 rules {} KB ({} B each); "
                     "tokens a day for one standing order: model {}, rule {}".format(
                         f["edge_to_action_ms"]["median"], f["edge_to_action_ms"]["p99"],
                         f["edge_alloc_bytes"]["median"], f["sixteen_rules_kb"], f["per_rule_bytes"],
                         f["model_tokens_per_day"], f["rule_tokens_per_day"]))
        elif name == "mcp_round_trip":
            value = "p50 {} ms, p99 {} ms (n={})".format(f["median"], f["p99"], f["n"])
        elif name == "mcp_session_heap":
            value = ("the first session holds {} KB (the server's code, one session, the called tool; one more "
                     "session {} KB), peak +{} KB, above the gateway in use (its web server {} KB, any first "
                     "connection's); the tool list is {} bytes, written a tool at a time".format(
                         _spread(f["session_kb"]), f["second_session_kb"]["median"], f["peak_above_kb"]["median"],
                         f["gateway_kb"]["median"], f["tool_list_bytes"]))
        elif name == "unauthenticated_heap":
            bodies = f.get("bodies_held")  # issue 41's: absent from figures taken before it
            value = ("at most {} KB: a head held at the caps {} KB; 1,500 headers (431) peak +{} KB;{} token off, a "
                     "message of 63 empty fragments {} KB (the WebSocket client itself {} KB)".format(
                         f["largest_kb"], _spread(f["head_held"]), f["many_headers_peak"]["median"],
                         " a POST's 16 KB body without a token (401) {} KB each, ten at once;".format(
                             _spread(bodies)) if bodies else "",
                         _spread(f["fragments_held"]), f["client_held"]["median"]))
        elif name == "prompt_cache":
            value = "{}/{} identical".format(f["identical"], f["compared"])
            if f.get("share") is not None:
                value = "{:.0f}% ({})".format(f["share"] * 100, value)
        else:
            value = str(f)
        rows.append((RUNTIME_NAMES[runtime], value))
    return rows


def table(results):
    """A Markdown table: figure, runtime, median [p10..p90], goal, met on the unix port."""
    figures = results["figures"]
    judged = results.get("verdicts") or verdicts(figures)
    lines = ["| figure | runtime | result: median [p10..p90] | goal (unix port) | met |",
             "|---|---|---|---|---|"]
    for name in GOALS:
        if name not in figures:
            continue
        verdict = judged.get(name, {}).get("met")
        mark = {True: "yes", False: "**no**", None: "-"}[verdict]
        for i, (runtime, value) in enumerate(_rows(name, figures[name])):
            lines.append("| {} | {} | {} | {} | {} |".format(
                name if i == 0 else "", runtime, value, GOALS[name] if i == 0 else "",
                mark if i == 0 else ""))
    lines.append("")
    for run_id in sorted(results.get("runs", {}), reverse=True):  # newest first
        run = results["runs"][run_id]
        machine = run.get("machine") or {}
        lines.append("taken {}{}: {}; on {} ({} cores, load average {} at the start), {}; CPython {}; "
                     "MicroPython {}; MicroPython timing runs at -X heapsize={}".format(
                         run_id, " (BENCH_QUICK)" if run.get("quick") else "", ", ".join(taken_by(results, run_id)),
                         machine.get("cpu"), machine.get("nproc"), machine.get("load_average"), machine.get("os"),
                         machine.get("cpython"), machine.get("micropython"), run.get("timing_heap")))
    return "\n".join(lines)
