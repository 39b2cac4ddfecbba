# `make soak`: 1000 turns over 10 Telegram chats and 4 WebSocket clients with seeded random faults.
#   python -m bench.soak [--out PATH]   SOAK_QUICK=1 (40 turns, shorter waits), SOAK_TURNS, SOAK_SEED,
#   SOAK_RATE, SOAK_HEAP (the firmware's -X heapsize), SOAK_FORM (mpy: the .mpy bundle, py: sources, romfs: the
#   ROMFS image over TLS in small-board mode at the bench's smallest heap + 15 %: bench/soak_chip.py).
# Every wait has a bound: a turn TURN_WAIT_S, the end DRAIN_S, a run without progress STALL_ABORT_S.
import argparse
import asyncio
import json
import os
import re
import time

from websockets.asyncio.client import connect

from bench import machine, soak_chip
from bench.setup import (
    API_KEY, ROOT, TG_TOKEN, Firmware, build_bundle, claim_work, free_port, fresh_dir)
from bench.soak_report import ERROR_MARK, Ledger, drift_kb, flash_line, heap_line, outcomes, table
from bench.soak_report import tag_in, unreadable_files
from host_sim.chaos import Chaos
from host_sim.fake_anthropic import FakeAnthropic
from host_sim.fake_telegram import FakeTelegram

QUICK = bool(os.environ.get("SOAK_QUICK"))
TURNS = int(os.environ.get("SOAK_TURNS") or (40 if QUICK else 1000))
SEED = int(os.environ.get("SOAK_SEED") or 1)
RATE = float(os.environ.get("SOAK_RATE") or 0.04)  # per turn, per fake
HEAP, HEAP_WHY = soak_chip.heap()
RUNTIME = soak_chip.FORM
TG_CHATS = 10
WS_CLIENTS = 4
TG_SHARE = 0.7  # of the turns, split evenly over the chats; the WebSocket clients share the rest
WINDOW = 20 if QUICK else 100  # turns per heap / flash window
SAMPLE_EVERY = 10  # turns between heap and flash samples
FLASH_SIZE = "2M"
# A Telegram reply can wait for a slow poll (SLOW_S), the poller's backoff (<= 60 s) and the
# sender's patience with a broken network (150 s): the full run waits for all of it.
TURN_WAIT_S = 60 if QUICK else 240
DRAIN_S = 90 if QUICK else 600  # at the end: until Telegram confirmed every update
STALL_ABORT_S = 90 if QUICK else 300  # no turn completed for this long: the soak ends, "stalled"
SAMPLE_GATE_S = 60  # a window's last turn waits this long at most for the window's heap sample
COMMAND_S = 30  # a console command's answer
BOOT_S = 120
SLOW_S = 5.0 if QUICK else 50.0  # a slow getUpdates: past the client's read timeout in the full run
STALL_S = 1.0 if QUICK else 3.0  # Claude's mid-stream silence
SETTLE_S = 2  # after the drain, for a late duplicate to show
FIRST_USER = 5001
OUT = os.path.join(ROOT, "bench", "soak_{}{}results.json".format("quick_" if QUICK else "",
                                                                "romfs_" if RUNTIME == "romfs" else ""))


def shares(turns):
    """{client: turns}: TG_SHARE of them over the Telegram chats, the rest over the WS clients."""
    tg_total = int(round(turns * TG_SHARE))
    plan = {}
    for names, total in ((["tg{}".format(n) for n in range(TG_CHATS)], tg_total),
                         (["ws{}".format(n) for n in range(WS_CLIENTS)], turns - tg_total)):
        for i, name in enumerate(names):
            plan[name] = total // len(names) + (1 if i < total % len(names) else 0)
    return plan


class Soak:
    def __init__(self, work):
        self.work = work
        self.flash, self.image = os.path.join(work, "flash"), os.path.join(work, "flash.img")
        tls = soak_chip.prepare(self.image, FLASH_SIZE, self.flash)  # SOAK_FORM=romfs: both fakes on https
        self.claude = FakeAnthropic(api_key=API_KEY, ssl_context=tls)
        self.tg = FakeTelegram(token=TG_TOKEN, ssl_context=tls)
        # Telegram faults are drawn at Telegram turns only: drawn at the WebSocket clients' quick
        # turns they would pile up at the fake while the poller backs off. Claude's at every turn.
        self.tg_chaos = Chaos(SEED, RATE, telegram=self.tg, slow_seconds=SLOW_S)
        self.claude_chaos = Chaos(SEED, RATE, anthropic=self.claude, stall_seconds=STALL_S)
        self.ledger = Ledger(WINDOW)
        self.plan = shares(TURNS)
        self.ws_port = free_port()
        self.firmware = None
        self.stalled = None
        self.finished = False
        self.logs = []  # console output of every firmware process that ended
        self.claimed = 0
        self.done = 0
        self.last_update = 0  # the highest update_id the users sent
        self.ws_answers = {}  # client -> [(turn index, text)]
        self.tg_windows = {}  # user -> [count of bot messages when each turn was sent]
        self.drain_s = None
        self.heap_last = 0

    # ---- the firmware, restarted if it dies ----

    def boot(self):
        self.firmware = Firmware(
            RUNTIME, self.flash, "--anthropic-api", self.claude.url, "--telegram-api", self.tg.url,
            "--ws-port", self.ws_port, "--flash-image", self.image, "--flash-size", FLASH_SIZE,
            heap=HEAP)
        self.firmware.ready(BOOT_S)

    def provision(self):
        self.firmware.command("set_tg_token " + TG_TOKEN, COMMAND_S)
        self.firmware.unlimit(COMMAND_S)
        for user in range(FIRST_USER, FIRST_USER + TG_CHATS):
            self.firmware.command("tg_allow {}".format(user), COMMAND_S)
        out = self.firmware.command("ws_token", COMMAND_S)
        self.ws_token = re.search(r"gateway token: (\S+)", out).group(1)

    async def watch(self):
        while not self.finished:
            await asyncio.sleep(1)
            if self.firmware.proc.poll() is None:
                continue
            self.ledger.crashes.append((self.done, "process exited ({})".format(
                self.firmware.proc.returncode)))
            self.logs.append(self.firmware.output)
            try:
                await asyncio.to_thread(self.boot)
            except (RuntimeError, TimeoutError) as exc:
                self.stalled = "the firmware did not restart: {}".format(str(exc)[:300])
                print("soak: " + self.stalled)
                return

    def crash_lines(self):
        out = "\n".join(self.logs + [self.firmware.output])
        return [line for line in out.splitlines()
                if line.startswith("crash:") or line.startswith("--- reset ---")
                or "watchdog reset" in line]

    async def sample(self):
        at = self.done
        try:
            out = await asyncio.to_thread(self.firmware.command, "heap_info", COMMAND_S)
            match = re.search(r"heap: (\d+) bytes free, (\d+) used", out)
            if match:
                self.heap_last = int(match.group(2))
                self.ledger.heap_sample(at, self.heap_last)
        except (RuntimeError, TimeoutError, OSError) as exc:  # OSError: the process ended meanwhile (watch())
            print("soak: heap sample failed: {}".format(str(exc)[:200]))
        await asyncio.to_thread(self.ledger.flash_sample, at, self.image)

    async def sampler(self):
        """Heap and flash every SAMPLE_EVERY turns, and at once when a window has no heap sample."""
        next_at = SAMPLE_EVERY
        while not self.finished:
            at = self.done
            window_bare = at > 0 and self.ledger.window_of(at) not in self.ledger.heap
            if at >= next_at or window_bare:
                next_at = at - at % SAMPLE_EVERY + SAMPLE_EVERY
                await self.sample()
            else:
                await asyncio.sleep(0.2)

    # ---- the clients ----

    async def claim(self, telegram):
        """The next turn: chaos draws for it; a window's last turn first waits (bounded) until the
        window has a heap sample, so every window has one."""
        number = self.claimed + 1
        window = (number - 1) // WINDOW
        if window > 0 and (window - 1) not in self.ledger.heap:
            deadline = time.monotonic() + SAMPLE_GATE_S
            while (window - 1) not in self.ledger.heap and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
        self.claimed += 1
        if telegram:
            self.tg_chaos.step()
        self.claude_chaos.step()

    async def telegram_client(self, n):
        user, client = FIRST_USER + n, "tg{}".format(n)
        windows = self.tg_windows.setdefault(user, [])
        for index in range(self.plan[client]):
            await self.claim(True)
            tag = "soak-{}-{}".format(client, index)
            before = len(self.tg.sent(user))
            windows.append(before)
            self.ledger.turn(client, tag, time.time())
            update_id = self.tg.user_message(user, "{}. Please echo this.".format(tag))
            self.last_update = max(self.last_update, update_id or 0)
            deadline = time.monotonic() + TURN_WAIT_S
            while len(self.tg.sent(user)) <= before and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            self.done += 1

    async def ws_client(self, n):
        client = "ws{}".format(n)
        got = self.ws_answers.setdefault(client, [])
        url = "ws://127.0.0.1:{}/ws?token={}".format(self.ws_port, self.ws_token)
        index = 0
        while index < self.plan[client]:
            try:
                async with connect(url, max_size=None, open_timeout=30) as ws:
                    await asyncio.wait_for(ws.recv(), 30)  # hello
                    while index < self.plan[client]:
                        await self.claim(False)
                        tag = "soak-{}-{}".format(client, index)
                        index += 1  # spent once sent, answered or not
                        self.ledger.turn(client, tag, time.time())
                        try:
                            await ws.send(json.dumps({"type": "message", "chat_id": client,
                                                      "content": "{}. Please echo this.".format(tag)}))
                            await self._ws_answer(ws, got, index - 1, tag)
                        finally:
                            self.done += 1
            except (OSError, asyncio.TimeoutError, Exception) as exc:  # a crash drops the socket
                print("soak: {} reconnects after {}".format(client, exc.__class__.__name__))
                await asyncio.sleep(2)

    async def _ws_answer(self, ws, got, index, tag):
        """Frames until this turn's answer (an earlier turn's late answer is recorded on the way)."""
        deadline = time.monotonic() + TURN_WAIT_S
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), max(1, deadline - time.monotonic())))
            if frame.get("type") == "response":
                text = frame.get("content") or ""
            elif frame.get("type") == "error":
                text = "{} {}".format(ERROR_MARK, frame.get("error"))
            else:
                continue
            got.append((index, text))
            if tag_in(tag, text) or "soak-" not in text:  # this turn's, or an untagged one
                return

    def telegram_answers(self):
        out = {}
        for n in range(TG_CHATS):
            user = FIRST_USER + n
            windows = self.tg_windows.get(user, [])
            answers = []
            for i, message in enumerate(self.tg.sent(user)):
                turn = max([k for k, start in enumerate(windows) if start <= i] or [0])
                answers.append((turn, message["shown"]))
            out["tg{}".format(n)] = answers
        return out

    def answers(self):
        out = self.telegram_answers()
        out.update(self.ws_answers)
        return out

    async def drain(self):
        """At the end: wait (DRAIN_S at most) until Telegram has confirmed every update. The offset
        passes an update only once its reply was sent or its failure reported, so what has not
        come by then is lost, not late. The WebSocket clients waited for their answers already."""
        started = time.monotonic()
        while self.tg.offset_confirmed < self.last_update:
            if time.monotonic() - started > DRAIN_S:
                print("soak: Telegram confirmed updates up to {} of {} after {} s".format(
                    self.tg.offset_confirmed, self.last_update, DRAIN_S))
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(SETTLE_S)
        self.drain_s = round(time.monotonic() - started)

    async def run(self):
        tasks = [asyncio.create_task(self.telegram_client(n)) for n in range(TG_CHATS)]
        tasks += [asyncio.create_task(self.ws_client(n)) for n in range(WS_CLIENTS)]
        self.ledger.flash_sample(0, self.image)  # the baseline: the image after boot and setup
        helpers = [asyncio.create_task(self.watch()), asyncio.create_task(self.sampler())]
        # The soak stops by itself: when no turn completes for STALL_ABORT_S, it ends and says so.
        last, last_at = -1, time.monotonic()
        while not all(task.done() for task in tasks) and self.stalled is None:
            await asyncio.sleep(1)
            if self.done != last:
                if self.done // WINDOW > max(0, last) // WINDOW:
                    print("soak: {} of {} turns done; heap in use at the last sample: {} KB".format(
                        self.done, TURNS, round(self.heap_last / 1024)), flush=True)
                last, last_at = self.done, time.monotonic()
            elif time.monotonic() - last_at > STALL_ABORT_S:
                self.stalled = "no turn completed for {} s after {} turns".format(STALL_ABORT_S, last)
                print("soak: " + self.stalled)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.stalled is None:
            await self.drain()
        self.finished = True
        await asyncio.gather(*helpers)
        await self.sample()  # the last window's figures, after the drain


def main(argv=None):
    parser = argparse.ArgumentParser(description="Soak test: many turns, seeded faults, one report.")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    claim_work()
    if RUNTIME == "mpy":
        build_bundle()
    soak = Soak(fresh_dir("soak"))
    soak.claude.start()
    soak.tg.start()
    started = time.time()
    try:
        soak.boot()
        soak.provision()
        asyncio.run(soak.run())
    finally:
        output = soak.firmware.stop() if soak.firmware else ""
        soak.claude.stop()
        soak.tg.stop()
    answers = soak.answers()
    result = {"machine": machine.describe(), "seed": SEED, "rate": RATE, "runtime": RUNTIME,
              "heap": HEAP, "heap_why": HEAP_WHY, "tls": soak_chip.TLS, "small_board": soak_chip.SMALL_BOARD,
              "turns": len(soak.ledger.turns), "telegram_chats": TG_CHATS,
              "websocket_clients": WS_CLIENTS, "turns_per_client": soak.plan,
              "duration_s": round(time.time() - started), "drain_s": soak.drain_s}
    result.update(outcomes(soak.ledger, answers))
    crash_lines = soak.crash_lines() if soak.firmware else []
    result["crashes"] = len(soak.ledger.crashes) + len(crash_lines)
    result["crash_details"] = [c[1] for c in soak.ledger.crashes] + crash_lines[:10]
    everything = "\n".join(soak.logs + [output])
    result["resets"], result["memory_errors"], result["memory_error_lines"] = \
        soak_chip.resets_and_memory_errors(everything)
    result["resets"] += len(soak.ledger.crashes)  # a process that died and was started again
    result["heap_line"] = heap_line(soak.ledger, len(soak.ledger.turns))
    result["heap_drift_kb"] = drift_kb(result["heap_line"])
    result["heap_floor_drift_kb"] = drift_kb(result["heap_line"], "min_used_kb")
    result["heap_samples"] = soak.ledger.heap_samples
    result["flash_line"] = flash_line(soak.ledger)
    flashed = sum(soak.ledger.flash.values())
    result["flash_bytes_per_turn"] = round(flashed / max(1, result["turns"]))
    result["unreadable_files"] = unreadable_files(soak.image)
    result["telegram_confirmed"] = [soak.tg.offset_confirmed, soak.last_update]
    injected = soak.tg_chaos.injected + soak.claude_chaos.injected
    result["faults_injected"] = len(injected)
    counts = soak.tg_chaos.counts()
    counts.update(soak.claude_chaos.counts())
    result["faults"] = counts
    result["injected"] = injected
    result["stalled"] = soak.stalled
    result["firmware_tail"] = output[-3000:].splitlines()
    with open(os.path.join(soak.work, "firmware.log"), "w") as f:
        f.write("\n--- next process ---\n".join(soak.logs + [output]))
    with open(os.path.join(soak.work, "answers.json"), "w") as f:  # for a post-mortem
        json.dump({"turns": soak.ledger.turns, "answers": answers}, f, indent=1)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(table(result))
    print("results: {} (firmware log, answers: {})".format(
        os.path.relpath(args.out, ROOT), os.path.relpath(soak.work, ROOT)))
    return result


if __name__ == "__main__":
    main()
