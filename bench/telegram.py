# Figures with the fake Telegram: boot to ready, first visible text of a streamed reply.
import time

from bench.gateway import text_deltas
from bench.setup import TG_TOKEN, Firmware, free_port, fresh_dir, reps
from bench.stats import summary
from host_sim.fake_anthropic import text
from host_sim.fake_telegram import FakeTelegram

OWNER = 42
REPLY_PIECES = 60
REPLY_CHUNK = 8
REPLY_DELAY_S = 0.05  # a 3 s generation, about what a real short answer takes
WAIT_S = 60


def _boot(runtime, flash, fake, tg):
    return Firmware(runtime, flash, "--anthropic-api", fake.url, "--telegram-api", tg.url,
                    "--ws-port", free_port())


def _provision(runtime, fake, tg):
    """A flash with the bot token and the owner on the allowlist (first boot done)."""
    flash = fresh_dir("tg-" + runtime)
    with _boot(runtime, flash, fake, tg) as firmware:
        firmware.ready()
        firmware.command("set_tg_token " + TG_TOKEN)
        firmware.command("tg_allow {}".format(OWNER))
    return flash


def _first_poll_after(tg, moment):
    times = [c["time"] for c in tg.calls if c["method"] == "getUpdates" and c["time"] >= moment]
    return min(times) if times else None


def boot_to_ready(runtime, fake, tg, flash):
    gateway, poller, ready = [], [], []
    for _ in range(reps(5, 2)):
        with _boot(runtime, flash, fake, tg) as firmware:
            listening = firmware.expect_time(r"gateway: web chat on")
            firmware.ready()
            polled = tg.wait_for(lambda: _first_poll_after(tg, firmware.started), 10)
            gateway.append((listening - firmware.started) * 1000)
            if polled:
                poller.append((polled - firmware.started) * 1000)
                ready.append((max(listening, polled) - firmware.started) * 1000)
    return {"ready_ms": summary(ready, 1), "gateway_ms": summary(gateway, 1),
            "poller_ms": summary(poller, 1)}


def first_text(runtime, fake, tg, flash):
    shown, generation = [], []
    with _boot(runtime, flash, fake, tg) as firmware:
        firmware.ready()
        for n in range(reps(5, 2)):
            fake.reset()
            reply = "Word{} ".format(n) + "x" * (REPLY_PIECES * REPLY_CHUNK - 7)
            fake.script(text(reply, chunk=REPLY_CHUNK, delay=REPLY_DELAY_S))
            asked = time.time()
            tg.user_message(OWNER, "question {}".format(n))
            if not tg.wait_for(lambda: any(m["shown"] == reply for m in tg.sent(OWNER)), WAIT_S):
                continue
            deltas = text_deltas((fake.requests[-1].get("writes") or []))
            drafts = [d for d in tg.drafts(OWNER) if d["time"] >= asked and d["shown"].strip()]
            if deltas and drafts:
                shown.append((drafts[0]["time"] - deltas[0][0]) * 1000)
                generation.append((deltas[-1][0] - deltas[0][0]) * 1000)
    return {"first_text_ms": summary(shown, 1), "generation_ms": summary(generation, 1)}


def measure(fake, log):
    boot, first = {}, {}
    fake.log_writes = True
    try:
        for runtime in ("mpy", "cpython"):
            tg = FakeTelegram(token=TG_TOKEN)
            tg.start()
            try:
                flash = _provision(runtime, fake, tg)
                boot[runtime] = boot_to_ready(runtime, fake, tg, flash)
                first[runtime] = first_text(runtime, fake, tg, flash)
            finally:
                tg.stop()
            log("  {}: boot to ready {} ms, first text on Telegram {} ms".format(
                runtime, boot[runtime]["ready_ms"]["median"],
                first[runtime]["first_text_ms"]["median"]))
    finally:
        fake.log_writes = False
    return boot, first
