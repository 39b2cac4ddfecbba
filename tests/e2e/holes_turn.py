# Turns on a heap whose largest free hole is about 4 KB (MicroPython): after a first turn, every free byte is
# taken in 4 KB blocks (and the smaller gaps with smaller ones), then every other block is freed: the free
# room stays ample (half of what was free), but any single allocation over about 4 KB raises MemoryError
# with its size. The test
# (test_large_allocations.py) then sends Telegram messages through its fakes; a console turn follows.
#   micropython -X heapsize=N tests/e2e/holes_turn.py LIB FLASH API_URL API_KEY TG_URL TG_TOKEN WS_PORT N_TG [STANDINS]
#   LIB: firmware/, a bundle's lib/, or romfs:<image> (the ROMFS form, as the bench runs it; STANDINS: the
#   stand-ins' ROMFS image)
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, TG, TOKEN, PORT, N_TG = sys.argv[1:9]
if len(sys.argv) > 9:  # the ROMFS form: the stand-ins' own image (tests/runtimes.py romfs_firmware)
    common.STANDINS_IMAGE = sys.argv[9]
common.use_firmware(LIB)

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402
from mimi.bus.message import Message  # noqa: E402
from mimi.health import memory_errors  # noqa: E402

HOLE = 4608 - 32  # a freed block and its bytearray's header: a free run of 4.5 KB (one Telegram message fits)
PIN = 16  # the smallest gap filled
OWNER = "42"
CONSOLE_REPLY_MARK = "CONSOLE TURN DONE"
_KEPT = []  # the pins, held for the rest of the run


def fragment():
    """Take the whole free heap in HOLE-sized blocks (the gaps below that size too), then free every other
    block: free runs of about 4 KB, held blocks between them. Returns how many holes were made."""
    gc.collect()
    n = (gc.mem_free() + gc.mem_alloc()) // HOLE  # more than can ever be free
    blocks, gaps = [None] * n, [None] * (n * 8)  # made first: no list grows once the heap is full
    count = 0
    try:
        while count < n:
            blocks[count] = bytearray(HOLE)
            count += 1
    except MemoryError:
        pass
    size, taken = HOLE, 0
    while size >= PIN and taken < len(gaps):
        try:
            gaps[taken] = bytearray(size)
            taken += 1
        except MemoryError:
            size //= 2
    for i in range(1, count, 2):
        blocks[i] = None
    gc.collect()
    _KEPT.append((blocks, gaps))
    return count // 2


def largest_hole():
    """The largest bytearray that can be allocated now (a probe, freed at once)."""
    low, high = 0, 64 * 1024
    while low < high:
        mid = (low + high + 1) // 2
        try:
            bytearray(mid)  # made and dropped: garbage the next collection takes back
            low = mid
        except MemoryError:
            high = mid - 1
    return low


def trace(name, exc=None):  # every MemoryError a loop survives is printed with where it came from
    print("ALLOC FAILED in the {}: {}".format(name, exc))
    if exc is not None:
        sys.print_exception(exc)
    return original(name, exc)


original = memory_errors.short
memory_errors.short = trace


async def until(check, seconds):
    for _ in range(seconds * 50):
        if check():
            return True
        await asyncio.sleep(0.02)
    return False


async def main(app):
    runner = asyncio.create_task(app.main())
    agent = app.agent
    print("waiting for the first turn")
    await until(lambda: agent.turns + agent.failures >= 1 and agent.busy_with is None
                and app.bus.outbound.empty(), 60)
    await asyncio.sleep(1)
    count = fragment()
    print("FRAGMENTED holes={} free={} largest={}".format(count, gc.mem_free(), largest_hole()))
    done = await until(lambda: agent.turns + agent.failures >= 1 + int(N_TG) and agent.busy_with is None
                       and app.bus.outbound.empty(), 180)
    print("TELEGRAM TURNS DONE" if done else "TELEGRAM TURNS TIMED OUT")
    before = agent.turns
    await app.bus.inbound.put(Message("cli", "console", "a long answer on the console, please"))
    await until(lambda: agent.turns > before and agent.busy_with is None and app.bus.outbound.empty(), 60)
    await asyncio.sleep(0.5)
    print("{} turns={} failures={} largest={}".format(CONSOLE_REPLY_MARK, agent.turns, agent.failures,
                                                      largest_hole()))
    runner.cancel()


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"  # certificates and pages
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools", www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY), ("gw_config", "ws_port", PORT),
               ("tg_config", "api_base", TG), ("tg_config", "bot_token", TOKEN),
               ("tg_config", "allowlist", OWNER), ("tg_config", "roles", OWNER + "=owner")])
asyncio.run(main(firmware))
