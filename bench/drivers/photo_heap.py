# Peak GC heap of a text turn and of a 200 KB photo turn (the photo base64-encoded from flash into the
# request body as it is sent), sampled from a task (MicroPython).
#   micropython -X heapsize=N bench/drivers/photo_heap.py LIB FLASH API_URL API_KEY WS_PORT PHOTO_BYTES
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT, PHOTO_BYTES = sys.argv[1:7]
common.use_firmware(LIB)

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402
from mimi.bus.message import Message  # noqa: E402

SETTLE_S = 0.3
TURN_LIMIT_S = 60


def photo_message(app):
    """A Telegram-sized photo waiting in the inbox, as the channel leaves it for the agent."""
    from mimi.agent import attachments

    path = attachments.inbox_path(app.flash.root, "bench_photo", ".jpg")
    size = int(PHOTO_BYTES)
    with open(path, "wb") as f:
        f.write(b"\xff\xd8\xff\xe0")
        chunk = bytes(range(256)) * 4
        left = size - 6
        while left > 0:
            f.write(chunk[:min(left, len(chunk))])
            left -= len(chunk)
        f.write(b"\xff\xd9")
    item = attachments.media("image", path, "image/jpeg", None, size)
    item["caption"] = "What is in this photo?"
    return Message("cli", "console", "What is in this photo?", {"media": item})


async def measured(app, message):
    agent = app.agent
    before = agent.turns + agent.failures
    gc.collect()
    sampler = common.Sampler()
    task = asyncio.create_task(sampler.run())
    await app.bus.inbound.put(message)
    for _ in range(TURN_LIMIT_S * 200):
        if agent.turns + agent.failures > before and agent.busy_with is None and app.bus.outbound.empty():
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)
    sampler.running = False
    await task
    return sampler.peak - common.IMAGE_COST[0], agent.failures == 0


async def main(app):
    runner = asyncio.create_task(app.main())
    await asyncio.sleep(SETTLE_S)
    await measured(app, Message("cli", "console", "warm up"))  # lazy imports, first connection
    await measured(app, photo_message(app))  # the media modules' first import is not the turn's cost
    await asyncio.sleep(SETTLE_S)
    text_peak, text_ok = await measured(app, Message("cli", "console", "What is in this photo?"))
    photo_peak, photo_ok = await measured(app, photo_message(app))
    runner.cancel()
    common.report({"text_peak": text_peak, "photo_peak": photo_peak, "photo_bytes": int(PHOTO_BYTES),
                   "ok": text_ok and photo_ok})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
    www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY),
               ("gw_config", "ws_port", PORT)])
asyncio.run(main(firmware))
