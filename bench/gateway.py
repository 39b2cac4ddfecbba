# Figures taken through the WebSocket gateway: firmware overhead, token relay, throughput.
import asyncio
import json
import re
import time

from websockets.asyncio.client import connect

from bench.setup import Firmware, QUICK, free_port, reps, standard_flash
from bench.stats import summary, tail
from host_sim.fake_anthropic import text

CHAT = "bench"
FRAME_WAIT_S = 60
OVERHEAD_REPLY = 1024
STREAM_DELAY_S = 0.005  # the fake's pause between deltas while measuring overhead
RELAY_DELTAS = 100
RELAY_CHUNK = 8
RELAY_DELAY_S = 0.01
CLIENTS = 4
WINDOW_S = 2.0 if QUICK else 5.0
WARMUP_S = 1.0
# The same .mpy bundle on a tight heap (under 2 MB: a board without PSRAM, mimi/heap.py): the model clients' code is
# let go after each call and loaded again for the next, so its overhead less the roomy one's is what the reloads
# cost a turn. 1536K is roomy enough for the timing's own garbage not to matter.
TIGHT = ("mpy_tight", "mpy", "1536K")


def text_deltas(writes):
    """(time written, text) of every text_delta the fake wrote, in order."""
    out = []
    for when, raw in writes:
        for block in raw.decode("utf-8").split("\n\n"):
            data = "\n".join(line[5:].lstrip(" ") if line.startswith("data:") else ""
                             for line in block.split("\n") if line.startswith("data:"))
            if '"text_delta"' in data:
                out.append((when, json.loads(data)["delta"]["text"]))
    return out


def _last_write(writes):
    return writes[-1][0] if writes else None


class Session:
    """A booted firmware with its gateway; open() gives a WebSocket URL with the token."""

    def __init__(self, fake, runtime, heap=None, name=None):
        self.fake = fake
        self.runtime = runtime
        self.port = free_port()
        flash = standard_flash("gw-" + (name or runtime), sessions=("websocket_" + CHAT,))
        self.firmware = Firmware(runtime, flash, "--anthropic-api", fake.url, "--ws-port",
                                 self.port, **({"heap": heap} if heap else {}))
        self.firmware.expect(r"gateway: web chat on")
        self.firmware.ready().unlimit()
        out = self.firmware.command("ws_token")
        self.url = "ws://127.0.0.1:{}/ws?token={}".format(
            self.port, re.search(r"gateway token: (\S+)", out).group(1))

    def stop(self):
        self.firmware.stop()


async def _frame(ws):
    return json.loads(await asyncio.wait_for(ws.recv(), FRAME_WAIT_S))


async def _turn(ws, content, chat=CHAT):
    """Send one message; [(time received, frame)] up to the response or error frame."""
    frames = []
    await ws.send(json.dumps({"type": "message", "content": content, "chat_id": chat}))
    while True:
        frame = await _frame(ws)
        frames.append((time.time(), frame))
        if frame["type"] in ("response", "error"):
            return frames


def turn_record(server, content):
    """The request of the turn that said `content`, {} if none: the standard history is over the session's cap,
    so a consolidation's summary call runs beside the turns now and then, its request before or after theirs."""
    said = json.dumps(content)
    for record in reversed(server.requests):
        body = record.get("body")
        if isinstance(body, dict) and body.get("messages") and said in json.dumps(body["messages"][-1]):
            return record
    return {}


def answering(server, reply):
    """Every request answered with reply() (a turn's and a summary call's alike), so that a summary call running
    beside a turn never takes the reply scripted for it."""
    server.brain = lambda *request: reply()


async def _overhead_and_relay(session):
    fake = session.fake
    inbound, outbound, whole, in_stream, latencies = [], [], [], [], []
    failures = 0
    async with connect(session.url, max_size=None) as ws:
        await _frame(ws)  # hello
        await _turn(ws, "warm up")  # first connection, lazy imports
        answering(fake, lambda: text(("Garden notes. " * 80)[:OVERHEAD_REPLY], chunk=32, delay=STREAM_DELAY_S))
        for n in range(reps(20, 3)):
            fake.reset()
            sent = time.time()
            said = "overhead turn {}".format(n)
            frames = await _turn(ws, said)
            record = turn_record(fake, said)
            writes = record.get("writes") or []
            if frames[-1][1]["type"] != "response" or not writes:
                failures += 1
                continue
            replied = frames[-1][0]
            inbound.append((record["body_read_at"] - sent) * 1000)
            outbound.append((replied - _last_write(writes)) * 1000)
            whole.append((replied - sent) * 1000)
            in_stream.append((_last_write(writes) - writes[0][0]) * 1000)
        answering(fake, lambda: text("r" * (RELAY_DELTAS * RELAY_CHUNK), chunk=RELAY_CHUNK, delay=RELAY_DELAY_S))
        for n in range(reps(3)):
            fake.reset()
            said = "relay turn {}".format(n)
            frames = await _turn(ws, said)
            latencies.extend(_match(text_deltas(turn_record(fake, said).get("writes") or []), frames))
    overhead = [a + b for a, b in zip(inbound, outbound)]
    return {
        "overhead_ms": summary(overhead), "inbound_ms": summary(inbound),
        "outbound_ms": summary(outbound), "whole_turn_ms": summary(whole),
        "stream_ms": summary(in_stream), "failed_turns": failures,
    }, dict(tail(latencies), unit="ms")


def _match(deltas, frames):
    """Latency (ms) of each delta: from its write to the token frame completing its text."""
    tokens = [(when, f["content"]) for when, f in frames if f["type"] == "token"]
    out, got, i = [], 0, 0
    sent = 0
    for when, piece in deltas:
        sent += len(piece)
        while got < sent and i < len(tokens):
            got += len(tokens[i][1])
            i += 1
        if got < sent:
            break  # frames missing: the turn failed
        out.append((tokens[i - 1][0] - when) * 1000)
    return out


async def _client(url, chat, stop_at, done):
    async with connect(url, max_size=None) as ws:
        await _frame(ws)
        n = 0
        while time.time() < stop_at:
            frames = await _turn(ws, "message {} from {}".format(n, chat), chat)
            if frames[-1][1]["type"] == "response":
                done.append(frames[-1][0])
            n += 1


async def _throughput(session):
    session.fake.reset()
    session.fake.brain = None  # the default brain: echoes at once (delay 0)
    windows = reps(3)
    start = time.time()
    stop_at = start + WARMUP_S + windows * WINDOW_S
    done = []
    await asyncio.gather(*[_client(session.url, "tp{}".format(c), stop_at, done)
                           for c in range(CLIENTS)])
    rates = []
    for w in range(windows):
        low = start + WARMUP_S + w * WINDOW_S
        rates.append(sum(1 for t in done if low <= t < low + WINDOW_S) / WINDOW_S)
    return dict(summary(rates, 1), unit="turns/s", clients=CLIENTS, window_s=WINDOW_S,
                turns=len(done))


def measure(fake, log):
    overhead, relay, throughput = {}, {}, {}
    fake.log_writes = True
    try:
        for runtime, form, heap in (("mpy", "mpy", None), ("cpython", "cpython", None), TIGHT):
            session = Session(fake, form, heap, runtime)
            try:
                overhead[runtime], relay[runtime] = asyncio.run(_overhead_and_relay(session))
                throughput[runtime] = asyncio.run(_throughput(session))
            finally:
                session.stop()
            log("  {}: overhead {} ms, relay p50 {} / p99 {} ms, {} turns/s".format(
                runtime, overhead[runtime]["overhead_ms"]["median"], relay[runtime]["median"],
                relay[runtime]["p99"], throughput[runtime]["median"]))
    finally:
        fake.log_writes = False
        fake.brain = None
    tight, roomy = overhead["mpy_tight"]["overhead_ms"]["median"], overhead["mpy"]["overhead_ms"]["median"]
    overhead["reloads_ms"] = round(tight - roomy, 2) if tight is not None and roomy is not None else None
    log("  what the reloads cost a turn on a tight heap: {} ms".format(overhead["reloads_ms"]))
    return overhead, relay, throughput
