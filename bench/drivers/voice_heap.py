# Peak GC heap of a text turn and of a voice-note turn (the note streamed from flash to the speech-to-text
# service as multipart, the transcript shown, then Claude's turn), and the time from the note reaching the
# agent to its transcript at the channel, sampled from a task (MicroPython).
#   micropython -X heapsize=N bench/drivers/voice_heap.py LIB FLASH API_URL API_KEY WS_PORT SPEECH_URL SPEECH_KEY
#       NOTE_PATH
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT, SPEECH, SPEECH_KEY, NOTE = sys.argv[1:9]
common.use_firmware(LIB)

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402
from mimi.bus.message import Message  # noqa: E402

SETTLE_S = 0.3
TURN_LIMIT_S = 60
HEARD = "heard: "
shown_at = []  # ticks (us) when a transcript reached the console


def voice_message(app):
    """A Telegram voice note waiting in the inbox, as the channel leaves it for the agent."""
    from mimi.agent import attachments

    path = attachments.inbox_path(app.flash.root, "bench_voice", ".ogg")
    size = 0
    with open(NOTE, "rb") as src, open(path, "wb") as dst:
        while True:
            data = src.read(1024)
            if not data:
                break
            dst.write(data)
            size += len(data)
    item = attachments.media("audio", path, "audio/ogg", "voice.ogg", size)
    item["duration"] = 10
    return Message("cli", "console", "", {"media": item})


def watch_console(app):
    console = app.channels["cli"]
    send = console.send

    async def send_seen(message):
        if HEARD in message.text:
            shown_at.append(common.now_us())
        return await send(message)

    console.send = send_seen


async def measured(app, message):
    agent = app.agent
    before = agent.turns + agent.failures
    gc.collect()
    sampler = common.Sampler()
    task = asyncio.create_task(sampler.run())
    started = common.now_us()
    await app.bus.inbound.put(message)
    for _ in range(TURN_LIMIT_S * 200):
        if agent.turns + agent.failures > before and agent.busy_with is None and app.bus.outbound.empty():
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)
    sampler.running = False
    await task
    return sampler.peak - common.IMAGE_COST[0], agent.failures == 0, started


async def main(app):
    watch_console(app)
    runner = asyncio.create_task(app.main())
    await asyncio.sleep(SETTLE_S)
    await measured(app, Message("cli", "console", "warm up"))  # lazy imports, first connection
    await measured(app, voice_message(app))  # the voice modules' first import is not the turn's cost
    await asyncio.sleep(SETTLE_S)
    text_peak, text_ok, _ = await measured(app, Message("cli", "console", "What did I just say?"))
    del shown_at[:]
    voice_peak, voice_ok, started = await measured(app, voice_message(app))
    runner.cancel()
    common.report({"text_peak": text_peak, "voice_peak": voice_peak, "ok": text_ok and voice_ok and shown_at != [],
                   "to_transcript_ms": (shown_at[0] - started) / 1000 if shown_at else None})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
    www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY),
               ("gw_config", "ws_port", PORT), ("voice_config", "stt_url", SPEECH),
               ("voice_config", "stt_key", SPEECH_KEY)])
asyncio.run(main(firmware))
