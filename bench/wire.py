# Each wire format side by side: one turn's firmware overhead through the web gateway (the .mpy bundle under
# MicroPython, as firmware_overhead) and its peak heap (the ROMFS form, as peak_heap_per_turn), Claude's
# Messages API against an OpenAI-compatible server (an openai profile, the chain: that profile alone).
import asyncio
import re
import time

from websockets.asyncio.client import connect

from bench.drivers_run import run_driver
from bench.gateway import CHAT, OVERHEAD_REPLY, STREAM_DELAY_S, _frame, _last_write, _turn, answering, turn_record
from bench.heap import firmware_idle
from bench.setup import API_KEY, Firmware, free_port, micropython, reps, runtime_command, standard_flash
from bench.stats import summary
from host_sim import fake_anthropic, fake_openai

WIRES = ("anthropic", "openai")
MODEL = "gpt-4o-mini"
PEAK_REPLY = 1024
# The peak's heap: 2 MB and over, as a board with PSRAM, where each client's code is kept between calls (app.py),
# so the figure is the wire format's own. Under 2 MB a call also loads its client's code (peak_heap_per_turn).
PEAK_HEAP = "2560K"


def _reply(wire):
    words = ("Garden notes. " * 80)[:OVERHEAD_REPLY]
    if wire == "anthropic":
        return fake_anthropic.text(words, chunk=32, delay=STREAM_DELAY_S)
    return fake_openai.text(words, chunk=32, delay=STREAM_DELAY_S)


def _profile(lan):
    """NVS of a board whose chain is one openai profile at the fake server."""
    def prepare(flash):
        return {"llm_profiles": {"p1": "lan openai {} {}".format(lan.base, MODEL)}, "llm_config": {"chain": "lan"}}

    return prepare


async def _overhead(url, server):
    inbound, outbound, failures = [], [], 0
    async with connect(url, max_size=None) as ws:
        await _frame(ws)  # hello
        await _turn(ws, "warm up")
        wire = "openai" if isinstance(server, fake_openai.FakeOpenAI) else "anthropic"
        answering(server, lambda: _reply(wire))
        for n in range(reps(20, 3)):
            server.reset()
            sent = time.time()
            said = "overhead turn {}".format(n)
            frames = await _turn(ws, said)
            record = turn_record(server, said)
            writes = record.get("writes") or []
            if frames[-1][1]["type"] != "response" or not writes:
                failures += 1
                continue
            inbound.append((record["body_read_at"] - sent) * 1000)
            outbound.append((frames[-1][0] - _last_write(writes)) * 1000)
    return {"overhead_ms": summary([a + b for a, b in zip(inbound, outbound)]), "inbound_ms": summary(inbound),
            "outbound_ms": summary(outbound), "failed_turns": failures}


def _session(fake, lan, wire):
    port = free_port()
    prepare = _profile(lan) if wire == "openai" else None
    flash = standard_flash("wire-" + wire, sessions=("websocket_" + CHAT,), prepare=prepare)
    firmware = Firmware("mpy", flash, "--anthropic-api", fake.url, "--ws-port", port)
    firmware.expect(r"gateway: web chat on")
    firmware.ready().unlimit()
    token = re.search(r"gateway token: (\S+)", firmware.command("ws_token")).group(1)
    return firmware, "ws://127.0.0.1:{}/ws?token={}".format(port, token)


def _peak(fake, lan, wire, n):
    """One heap_turn run (ROMFS form): a warm-up turn, then a turn with a 1 KB reply."""
    words = ("All about the garden. " * (PEAK_REPLY // 22 + 1))[:PEAK_REPLY]
    prepare = None
    if wire == "anthropic":
        fake.reset()
        fake.script(fake_anthropic.text("Warmed up."), fake_anthropic.text(words, chunk=32))
    else:
        lan.reset()
        lan.script(fake_openai.text("Warmed up."), fake_openai.text(words, chunk=32))
        prepare = _profile(lan)
    flash = standard_flash("wire-peak-{}-{}".format(wire, n), sessions=("cli_console",), prepare=prepare)
    return run_driver(micropython(PEAK_HEAP), "heap_turn.py", runtime_command("romfs")[1], flash, fake.url, API_KEY,
                      free_port())


def measure(fake, log):
    lan = fake_openai.FakeOpenAI("openai", log_writes=True)
    lan.start()
    fake.log_writes = True
    out = {"heap": PEAK_HEAP, "reply_bytes": PEAK_REPLY, "model_server": "host_sim/fake_openai.py (openai)"}
    try:
        for wire in WIRES:
            firmware, url = _session(fake, lan, wire)
            server = lan if wire == "openai" else fake
            try:
                figures = asyncio.run(_overhead(url, server))
            finally:
                firmware.stop()
                server.brain = None
            runs = [_peak(fake, lan, wire, n) for n in range(reps(3))]
            figures["peak_kb"] = summary([r["above_idle"] / 1024 for r in runs], 1)
            figures["idle_kb"] = summary([firmware_idle(r) / 1024 for r in runs], 1)
            figures["failed_heap_turns"] = sum(1 for r in runs if not r["ok"])
            log("  {}: overhead {} ms, peak +{} KB above idle {} KB".format(
                wire, figures["overhead_ms"]["median"], figures["peak_kb"]["median"], figures["idle_kb"]["median"]))
            out[wire] = figures
    finally:
        fake.log_writes = False
        lan.stop()
    claude, other = out["anthropic"], out["openai"]
    out["openai_minus_anthropic"] = {
        "overhead_ms": _minus(other["overhead_ms"], claude["overhead_ms"], 2),
        "peak_kb": _minus(other["peak_kb"], claude["peak_kb"], 1),
        "idle_kb": _minus(other["idle_kb"], claude["idle_kb"], 1)}
    return (out,)


def _minus(a, b, digits):
    if a.get("median") is None or b.get("median") is None:
        return None
    return round(a["median"] - b["median"], digits)
