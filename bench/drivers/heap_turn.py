# Peak GC heap of one agent turn above the idle baseline, sampled from a task (MicroPython).
#   micropython -X heapsize=N bench/drivers/heap_turn.py LIB FLASH API_URL API_KEY WS_PORT
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT = sys.argv[1:6]
common.use_firmware(LIB)
common.mark_host()

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402
from mimi.bus.message import Message  # noqa: E402

SETTLE_S = 0.3
TURN_LIMIT_S = 60


async def one_turn(app, text):
    agent = app.agent
    before = agent.turns + agent.failures
    await app.bus.inbound.put(Message("cli", "console", text))
    for _ in range(TURN_LIMIT_S * 200):
        if agent.turns + agent.failures > before and agent.busy_with is None \
                and app.bus.outbound.empty():
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)  # the dispatcher hands the reply to the console
    return agent.failures == 0


async def main(app):
    runner = asyncio.create_task(app.main())
    await asyncio.sleep(SETTLE_S)
    warm_ok = await one_turn(app, "warm up")  # lazy imports, first connection, first trim...
    await asyncio.sleep(SETTLE_S)
    gc.collect()
    idle = gc.mem_alloc() - common.IMAGE_COST[0]  # the ROMFS images (mapped flash on the chip) not counted
    free = gc.mem_free()
    sampler = common.Sampler()
    task = asyncio.create_task(sampler.run())
    ok = await one_turn(app, "the measured turn")
    sampler.running = False
    await task
    runner.cancel()
    peak = sampler.peak - common.IMAGE_COST[0]
    common.report({"idle": idle, "heap": idle + free, "peak": peak, "image": common.IMAGE_COST[0],
                   "above_idle": peak - idle, "samples": sampler.samples, "standins": common.STANDINS_COST[0],
                   "host": common.HOST_COST[0],
                   "ok": ok and warm_ok, "turns": app.agent.turns})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"  # certificates and pages
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
    www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY),
               ("gw_config", "ws_port", PORT)])
asyncio.run(main(firmware))
