# Local rules on MicroPython: a pin edge's interrupt to the GPIO write its rule makes (latency), the bytes one
# edge allocates on its way, the heap 16 rules hold, and the tokens a day of readings costs judged by the
# model and by a rule.
#   micropython -X heapsize=N bench/drivers/rules_edge.py LIB FLASH API_URL API_KEY WS_PORT EDGES READINGS
import sys

sys.path.insert(0, "bench/drivers")
import common  # noqa: E402

LIB, FLASH, API, KEY, PORT, EDGES, READINGS = sys.argv[1:8]
common.use_firmware(LIB)
common.mark_host()

import asyncio  # noqa: E402
import gc  # noqa: E402

import esp32  # noqa: E402
import machine  # noqa: E402

esp32.set_flash_dir(FLASH)
from mimi import app as app_module  # noqa: E402

CHAT = ("cli", "console")
DOOR = {"do": [{"tool": "gpio_write", "input": {"pin": 5, "value": 1}}, {"say": "door open"}]}
FAN = {"when": {"above": 28}, "rearm": {"below": 26}, "do": [{"tool": "gpio_write", "input": {"pin": 6, "value": 1}},
       {"say": "hot: {value} C"}], "otherwise": [{"tool": "gpio_write", "input": {"pin": 6, "value": 0}}]}
SETTLE_S = 0.5
EDGE_WAIT_US = 5000000
HOLE = 1000  # bytes: a bytearray this long takes 1 KB of heap with its header


def _heap():
    gc.collect()
    return gc.mem_alloc()


async def _edge(app, door):
    """One rising edge on GPIO 4, waited for until the rule wrote GPIO 5 and finished."""
    machine.edge(4, 0)  # back down (this rule takes rising edges only), then past the debounce
    await asyncio.sleep(0.07)
    fired, before = door["state"]["fired"], machine.written(5)
    machine.edge(4, 1)
    await _fired(door, fired, before)


async def _fired(door, fired, before):
    """Until the rule wrote GPIO 5 and counted the firing; a rule that stops firing ends the run with why."""
    waited = common.now_us()
    while machine.written(5) is before or door["state"]["fired"] == fired:
        if common.elapsed_us(waited) > EDGE_WAIT_US:
            raise SystemExit("the door rule did not fire within 5 s: {}".format(door.get("state")))
        await asyncio.sleep(0)


def _run_alone(coro):
    """Drive a coroutine to its end without the event loop: no other task runs (and frees memory) meanwhile."""
    for _ in range(100):
        try:
            coro.send(None)
        except StopIteration:
            return True
    return False


def _edge_in_small_holes(app, door, extra=0):
    """Does a rule's whole path after the interrupt (the rule, the tool call, its audit line, the message)
    run when the heap's free space is only holes of about 1 KB? True: nothing on it allocates more than that
    at once. extra: bytes the check itself allocates first (a check of the check)."""
    gc.collect()
    count = gc.mem_free() // HOLE + 16
    keep, spare = [None] * count, [None] * count  # made first: growing a list would leave larger holes
    try:
        for i in range(count):
            keep[i] = bytearray(HOLE)
            spare[i] = bytearray(HOLE)
    except MemoryError:
        pass
    crumbs = None
    for size in (512, 256, 128, 64, 32, 16):  # what is left between them filled too, as a chain of tuples
        try:
            while True:
                crumbs = (bytearray(size), crumbs)
        except MemoryError:
            pass
    for i in range(count):
        spare[i] = None
    gc.collect()  # every other block freed: the free space is holes of about 1 KB (a 1100-byte one fails)
    try:
        if extra:
            bytearray(extra)
        return _run_alone(app.watchers.rules.event(door, 1))
    except MemoryError:
        return False
    finally:
        keep = spare = crumbs = None
        gc.collect()


async def _edges(app, count):
    """(latencies in us, bytes allocated per edge) for `count` rising edges on GPIO 4, after a first one that
    loads the code its path needs (reported alone)."""
    door = app.watchers.store.get("door")
    first = common.now_us()
    await _edge(app, door)
    first = common.elapsed_us(first)
    latencies, allocated = [], []
    for _ in range(count):
        machine.edge(4, 0)  # back down (this rule takes rising edges only), then past the debounce
        await asyncio.sleep(0.07)
        fired, before = door["state"]["fired"], machine.written(5)
        gc.collect()
        gc.disable()  # every byte the edge's path takes stays counted
        start_heap = gc.mem_alloc()
        start = common.now_us()
        machine.edge(4, 1)
        await _fired(door, fired, before)
        allocated.append(gc.mem_alloc() - start_heap)
        gc.enable()
        latencies.append(machine.written(5)[1] - start)
    holes = (_edge_in_small_holes(app, door), _edge_in_small_holes(app, door, 1500))  # the second must fail
    return latencies, allocated, first, holes


async def _tokens(app, count):
    """Tokens the same reading costs judged by the model (per reading), and by a rule (in all)."""
    watchers, store = app.watchers, app.budget.store
    model = watchers.add("heat_model", "temperature", 60, "switch GPIO 6 on above 28 C, off below 26 C; tell me",
                         CHAT, "owner")
    used = store.used_today()
    for _ in range(count):
        await watchers.tick(model)
        while watchers._busy("heat_model"):  # judged: its answer came back
            await asyncio.sleep(0.01)
    per_reading = (store.used_today() - used) // count
    watchers.remove("heat_model")
    rule = watchers.store.get("fan0")
    used = store.used_today()
    for _ in range(count):
        await watchers.tick(rule)
    return per_reading, store.used_today() - used


async def main(app):
    runner = asyncio.create_task(app.main())
    await asyncio.sleep(SETTLE_S)
    idle = _heap()
    app.part("watchers")  # made at the first watcher, as watch_add makes it (reading app.watchers never does)
    app.watchers.add("door", "gpio:4:rising", 0, "the door: light the porch", CHAT, "owner", DOOR)
    one = _heap()
    for i in range(15):
        app.watchers.add("fan{}".format(i), "temperature", 60, "the fan at 28 C", CHAT, "owner", FAN)
    sixteen = _heap()
    await asyncio.sleep(SETTLE_S)
    latencies, allocated, first_us, holes_ok = await _edges(app, int(EDGES))
    per_reading, rule_tokens = await _tokens(app, int(READINGS))
    runner.cancel()
    common.report({"latency_us": latencies, "edge_alloc": allocated, "first_edge_us": first_us,
                   "edge_in_1k_holes": holes_ok[0], "check_of_the_check": holes_ok[1], "engine_and_first": one - idle,
                   "sixteen_rules": sixteen - idle, "per_rule": (sixteen - one) // 15,
                   "model_tokens_per_reading": per_reading, "rule_tokens": rule_tokens,
                   "fake_requests_note": "counted by the CPython side"})


SHIPPED = "/rom" if LIB.startswith("romfs:") else "firmware"
firmware = app_module.App(
    data_root=FLASH + "/data", cert_dirs=[SHIPPED + "/certs"], tools_dir=FLASH + "/tools",
    www_dir=SHIPPED + "/www",
    overrides=[("llm_config", "api_base", API), ("llm_config", "api_key", KEY), ("gw_config", "ws_port", PORT),
               ("tool_config", "gpio_allow", "4,5,6"),
               ("safety_config", "calls", 1000),  # the breaker counts identical calls: a door repeats one
               ("safety_config", "rule_fires_hour", 3600)])  # past 60 firings an hour a rule is paused
asyncio.run(main(firmware))
