# Idle heap with the chat apps on (Matrix, Discord, Telegram, none), and the peak of one turn through the first one
# (MicroPython). The CPython side (bench/chat_apps.py) sends the users' messages when this driver says so.
#   micropython -X heapsize=N bench/drivers/chat_app_turn.py LIB FLASH API_URL API_KEY WS_PORT CHANNEL SETTINGS_FILE
#   (the settings as JSON in a file: the unix port stops with "FATAL: uncaught NLR" on an argument of 256 bytes or more)
import json
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT, CHANNEL, SETTINGS = sys.argv[1:8]
common.use_firmware(LIB)
common.mark_host()

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402
from mimi.bus.message import Message  # noqa: E402

SETTLE_S = 0.5
WAIT_S = 90
CONNECTED, WARM, MEASURE = "BENCH_CONNECTED", "BENCH_WARM", "BENCH_MEASURE"  # said to the CPython side


async def _until(check, seconds=WAIT_S):
    for _ in range(seconds * 50):
        if check():
            return True
        await asyncio.sleep(0.02)
    return False


def _say(mark):
    print(mark)
    if hasattr(sys.stdout, "flush"):
        sys.stdout.flush()


async def _turn(app, channel, number):
    """One answered turn: through the chat app (its user writes when told), or on the console."""
    if channel is None:
        before = app.agent.turns
        await app.bus.inbound.put(Message("cli", "console", "turn {}".format(number)))
        return await _until(lambda: app.agent.turns > before and app.agent.busy_with is None
                            and app.bus.outbound.empty())
    _say(WARM if number == 1 else MEASURE)
    return await _until(lambda: channel.answered >= number)


async def main(app):
    runner = asyncio.create_task(app.main())
    channel = None if CHANNEL == "none" else app.channels.get(CHANNEL)
    connected = True
    if CHANNEL != "none":
        connected = await _until(lambda: app.channels.get(CHANNEL) is not None and app.channels[CHANNEL].connected)
        channel = app.channels.get(CHANNEL)
    others = [name for name in ("matrix", "discord") if name != CHANNEL and name in app.channels]
    for name in others:  # every app set up is connected before the idle figure
        connected = connected and await _until(lambda: app.channels[name].connected)
    _say(CONNECTED)
    warm_ok = connected and await _turn(app, channel, 1)
    await asyncio.sleep(SETTLE_S)
    gc.collect()
    idle = gc.mem_alloc() - common.IMAGE_COST[0]
    free = gc.mem_free()
    sampler = common.Sampler()
    task = asyncio.create_task(sampler.run())
    ok = warm_ok and await _turn(app, channel, 2)
    sampler.running = False
    await task
    await asyncio.sleep(SETTLE_S)
    gc.collect()
    after = gc.mem_alloc() - common.IMAGE_COST[0]
    runner.cancel()
    peak = sampler.peak - common.IMAGE_COST[0]
    common.report({"idle": idle, "after": after, "heap": idle + free, "peak": peak, "image": common.IMAGE_COST[0],
                   "above_idle": peak - idle, "host": common.HOST_COST[0], "ok": bool(ok),
                   "connected": connected, "channels": sorted(app.channels)})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"
overrides = [("llm_config", "api_base", API), ("llm_config", "api_key", KEY), ("gw_config", "ws_port", PORT)]
with open(SETTINGS) as f:
    settings = json.load(f)
for ns, values in settings.items():
    for key, value in values.items():
        overrides.append((ns, key, value))
firmware = app_module.App(data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
                          www_dir=SHIPPED + "/www", overrides=overrides)
asyncio.run(main(firmware))
