# Watchdog feeding, the early-crash counter in NVS, safe mode, and the healthy-boot verdict.
import asyncio
import time

import esp32
import machine
from mimi import heap, platform
from mimi.bus.message import Bus, Message
from mimi.health import crashes, watchdog
from mimi.health.limits import configure
from support import raises, remove_tree, run, tempdir, write


def _flash():
    path = tempdir("health")
    esp32.set_flash_dir(path)
    machine._state["reset_cause"] = machine.PWRON_RESET
    return path


def _done(path):
    esp32.set_flash_dir(None)
    machine._watchdog[0] = None
    machine._state["reset_cause"] = machine.PWRON_RESET
    remove_tree(path)


def _crash():
    raise RuntimeError("boom at startup")


def _boot_and_crash():
    """One boot whose start raises: guarded() counts it and resets (the host's reset is an exception)."""
    raises(machine.ResetRequested, crashes.guarded, _crash)
    esp32._reload()  # the reset: uncommitted NVS would be lost


def test_three_early_crashes_in_a_row_mean_safe_mode_once():
    path = _flash()
    try:
        _boot_and_crash()
        _boot_and_crash()
        assert crashes.count() == 2
        assert crashes.decide() is False
        _boot_and_crash()
        assert crashes.decide() is True and crashes.state["crashes"] == 3
        esp32._reload()
        assert crashes.decide() is False  # safe mode lasts one boot; a restart tries again
    finally:
        _done(path)


def test_a_healthy_boot_clears_the_count():
    path = _flash()
    try:
        _boot_and_crash()
        _boot_and_crash()
        crashes.clear()
        esp32._reload()
        _boot_and_crash()
        assert crashes.count() == 1 and crashes.decide() is False
    finally:
        _done(path)


def test_a_watchdog_reset_counts_as_a_crash():
    path = _flash()
    try:
        wdt = machine.WDT(timeout=200)  # not 10 ms: a loaded machine may pause that long between two lines
        assert not machine.wdt_expired()
        time.sleep(0.25)
        assert machine.wdt_expired() and wdt.feeds == 0
        raises(machine.WDTReset, machine.wdt_bite)
        assert machine.reset_cause() == machine.WDT_RESET and not machine.wdt_expired()
        esp32._reload()
        crashes.decide()
        assert crashes.state["watchdog_reset"] and crashes.count() == 1
    finally:
        _done(path)


def test_a_reset_exception_is_not_counted_as_a_crash():
    path = _flash()
    try:
        raises(machine.ResetRequested, crashes.guarded, machine.reset)
        assert crashes.count() == 0
    finally:
        _done(path)


def test_the_crash_hook_counts_down_and_disappears():
    root = tempdir("hook")
    try:
        crashes.inject_crash_if_asked(root)  # no file: nothing happens
        write(root + "/crash_at_boot", "2")
        assert "test hook" in str(raises(RuntimeError, crashes.inject_crash_if_asked, root))
        raises(RuntimeError, crashes.inject_crash_if_asked, root)
        crashes.inject_crash_if_asked(root)
    finally:
        remove_tree(root)


# --- Health, on a small stand-in of the app's parts it watches -----------------------------------


class _Commands:
    def __init__(self):
        self.table = {}
        self.lines = []

        async def status():
            self.lines.append("core status")

        self.table["status"] = (status, "status", 0, 0, "")

    def add(self, name, handler, usage, fewest, most, description):
        self.table[name] = (handler, usage, fewest, most, description)

    def out(self, text):
        self.lines.append(text)


class _Obj:
    pass


def _app(root):
    app = _Obj()
    app.console = _Obj()
    app.console.commands = _Commands()
    app.bus = Bus()
    app.agent = _Obj()
    app.agent.busy_with, app.agent.turns = None, 0
    app.idle = asyncio.Event()

    async def agent_run():
        await app.idle.wait()

    app.agent.run = agent_run
    app.dispatcher = _Obj()
    app.dispatcher.run = agent_run
    app.wifi = _Obj()
    app.wifi.is_up = lambda: True
    app.flash = _Obj()
    app.flash.root = root + "/data"
    app.started_ms = platform.ticks_ms()
    app.gateway, app.telegram = _Obj(), _Obj()
    return app


class _Limits:
    def __init__(self, **limits):
        self.saved = (watchdog.Health.wdt_timeout_ms, watchdog.Health.turn_limit_s, watchdog.Health.healthy_after_s)
        configure(",".join("{}={}".format(k, v) for k, v in limits.items()))

    def restore(self):
        h = watchdog.Health
        h.wdt_timeout_ms, h.turn_limit_s, h.healthy_after_s = self.saved


def _booted_after(root, crashes_in_a_row):
    """The app and its Health after a boot that followed this many early crashes (3: safe mode)."""
    for _ in range(crashes_in_a_row):
        crashes.record_crash()
    crashes.decide()
    app = _app(root)
    return app, watchdog.Health(app)


def test_a_stuck_turn_stops_the_feeding_and_the_watchdog_bites():
    path = _flash()
    limits = _Limits(wdt_ms=300, turn_s=0, healthy_s=3600)  # not 30 ms: a loaded machine pauses that long
    try:
        app = _app(path)
        health = watchdog.Health(app)

        async def main():
            health.start_core()
            health.tick()
            assert health.problem is None and not machine.wdt_expired()
            app.agent.busy_with = Message("cli", "console", "hi")
            health.tick()  # the turn starts
            await asyncio.sleep(0.01)
            health.tick()
            assert "stuck on one turn" in health.problem
            await asyncio.sleep(0.35)
            assert machine.wdt_expired()
            app.agent.busy_with = None  # the turn ends: fed again
            health.tick()
            assert health.problem is None and not machine.wdt_expired()
            app.idle.set()

        run(main())
    finally:
        limits.restore()
        _done(path)


def test_an_ended_agent_task_stops_the_feeding():
    path = _flash()
    limits = _Limits(wdt_ms=1000)
    try:
        app = _app(path)
        health = watchdog.Health(app)

        async def main():
            agent, dispatcher = health.start_core()
            app.idle.set()
            await asyncio.sleep(0.01)
            assert agent.done()
            health.tick()
            assert health.problem == "the agent task has ended"

        run(main())
    finally:
        limits.restore()
        _done(path)


def test_the_first_turn_proves_the_boot_healthy_and_marks_the_firmware_valid():
    path = _flash()
    limits = _Limits(healthy_s=3600)
    try:
        part = esp32.Partition("ota_1")
        part.writeblocks(0, bytearray(b"\xe9" * 4096))
        part.set_boot()
        esp32._reload()  # now running the new, unconfirmed slot
        app, health = _booted_after(path, 2)

        async def main():
            health.start_core()
            health.tick()
            assert not health.healthy and crashes.count() == 2
            app.agent.turns = 1
            health.tick()
            assert health.healthy and crashes.count() == 0
            await app.console.commands.table["status"][0]()
            app.idle.set()

        run(main())
        assert app.console.commands.lines[0] == "core status"
        assert app.console.commands.lines[1].startswith("  Health: normal; boot healthy; watchdog fed")
        assert app.console.commands.lines[2] == "  Firmware: running ota_1, next boot ota_1"
        esp32._reload()
        assert esp32.Partition(esp32.Partition.RUNNING).info()[4] == "ota_1"  # no rollback
    finally:
        limits.restore()
        _done(path)


def test_uptime_with_network_also_proves_health_but_not_without_network():
    path = _flash()
    limits = _Limits(healthy_s=0)
    try:
        app = _app(path)
        app.wifi.is_up = lambda: False
        health = watchdog.Health(app)

        async def main():
            health.start_core()
            health.tick()
            assert not health.healthy
            app.wifi.is_up = lambda: True
            health.tick()
            assert health.healthy
            app.idle.set()

        run(main())
    finally:
        limits.restore()
        _done(path)


def test_safe_mode_runs_no_agent_keeps_the_gateway_and_answers_every_message():
    path = _flash()
    try:
        app, health = _booted_after(path, 3)
        assert health.startable([app.gateway, app.telegram]) == [app.gateway]

        async def main():
            health.start_core()
            await app.bus.inbound.put(Message("websocket", "w1", "hello", {"id": 7}))
            reply = await asyncio.wait_for(app.bus.outbound.get(), 1)
            assert reply.channel == "websocket" and reply.chat_id == "w1"
            assert reply.meta["kind"] == "error" and reply.meta["request"] == {"id": 7}
            assert "safe mode" in reply.content
            app.agent.turns = 1
            health.tick()
            assert not health.healthy  # safe mode never confirms a firmware
            await app.console.commands.table["status"][0]()
            app.idle.set()

        run(main())
        assert "SAFE MODE (3 crashes" in app.console.commands.lines[1]
    finally:
        _done(path)


def test_unknown_limits_are_refused():
    raises(ValueError, configure, "bogus=1")


_RARE = ("mimi.health.boot_verdict", "mimi.health.safe_mode", "mimi.health.status_lines")


def _rare_loaded():
    import sys

    return [name for name in _RARE if name in sys.modules]


def test_a_normal_boot_loads_the_verdict_only_to_give_it_then_lets_it_go():
    path = _flash()
    limits = _Limits(healthy_s=3600)
    try:
        for name in _RARE:
            heap.forget(name)
        crashes.record_crash()
        assert crashes.decide() is False  # one early crash: a normal boot
        app = _app(path)
        health = watchdog.Health(app)

        async def main():
            health.start_core()
            health.tick()
            assert _rare_loaded() == [] and not health.healthy  # the boot window: no safe mode, no verdict yet
            app.agent.turns = 1
            health.tick()
            assert health.healthy and crashes.count() == 0  # given (boot_verdict.py clears the count)...
            assert _rare_loaded() == []  # ...and let go
            health.tick()
            await app.console.commands.table["status"][0]()
            assert _rare_loaded() == ["mimi.health.status_lines"]  # typed
            app.idle.set()

        run(main())
        assert app.console.commands.lines[1].startswith("  Health: normal; boot healthy; watchdog fed")
    finally:
        limits.restore()
        _done(path)


def test_safe_mode_loads_its_stand_in_and_never_the_verdict():
    path = _flash()
    try:
        for name in _RARE:
            heap.forget(name)
        app, health = _booted_after(path, 3)

        async def main():
            health.start_core()
            app.agent.turns = 1
            health.tick()
            assert _rare_loaded() == ["mimi.health.safe_mode"]
            app.idle.set()

        run(main())
    finally:
        _done(path)
