# A MemoryError in a loop is survived and told once an hour per loop (health/memory_errors.py); the owner's
# notice is dropped, with a console line, rather than waited for when the outbound queue is full.
import asyncio

from mimi import platform
from mimi.bus.message import Bus
from mimi.channels.owner import Owner
from mimi.health import memory_errors, memory_notice
from support import run

_TOO_BIG = 1 << 40  # bytes no heap has: a real MemoryError on both runtimes


class _Owner:
    def __init__(self):
        self.told = []

    def tell(self, text, may_drop=False):
        self.told.append((text, may_drop))


def _fresh():
    owner = _Owner()
    memory_errors.use(owner)
    memory_notice.told.clear()
    return owner


def _short_of_memory():
    try:
        bytearray(_TOO_BIG)
    except MemoryError as exc:
        return exc
    raise AssertionError("no MemoryError")


def test_a_memory_error_is_told_once_an_hour_per_loop_and_the_missed_ones_are_counted():
    owner = _fresh()
    try:
        assert memory_errors.short("cron", _short_of_memory()) is True
        assert len(owner.told) == 1
        text, may_drop = owner.told[0]
        assert "ran short of memory in its cron and carried on: nothing was restarted" in text
        assert "at most once an hour" in text and may_drop  # never waits for room in the queue
        for _ in range(5):  # a flood: told once
            assert memory_errors.short("cron", _short_of_memory()) is False
        assert len(owner.told) == 1
        assert memory_errors.short("agent", _short_of_memory()) is True  # another loop has its own hour
        assert len(owner.told) == 2
        # an hour on, the next one is told again, with the count of those not told
        memory_notice.told["cron"][0] = platform.ticks_add(platform.ticks_ms(), -memory_notice.QUIET_S * 1000 - 1)
        assert memory_errors.short("cron") is True
        assert "It happened 5 more times since the last notice." in owner.told[2][0]
    finally:
        memory_errors.use(None)


def test_a_loop_ended_by_a_memory_error_runs_again_and_other_errors_still_end_it():
    owner = _fresh()
    rounds = []

    async def loop(tag):
        rounds.append(tag)
        if len(rounds) < 3:
            bytearray(_TOO_BIG)  # the step fails for want of memory, twice
        return "stopped"

    async def broken():
        raise ValueError("a bug")

    async def main():
        assert await memory_errors.lasting("watchers", loop, "x") == "stopped"
        assert rounds == ["x", "x", "x"]
        assert len(owner.told) == 1 and "its watchers" in owner.told[0][0]  # two failures, one notice
        try:
            await memory_errors.lasting("gateway", broken)
        except ValueError:
            return True
        return False

    try:
        assert run(main()) is True
    finally:
        memory_errors.use(None)


class _Config:
    def get(self, ns, key):
        return "42=owner,7=observer" if (ns, key) == ("tg_config", "roles") else ""


class _App:
    def __init__(self):
        self.bus = Bus()
        self.config = _Config()
        self.channels = {"telegram": object()}


def test_an_owner_notice_that_may_be_dropped_never_waits_for_a_full_queue():
    app = _App()
    owner = Owner(app)
    while not app.bus.outbound.full():
        owner.tell("filler")
    queued = app.bus.outbound.qsize()

    async def main():
        owner.tell("short of memory", True)  # dropped at once (a console line says so)
        await app.bus.outbound.get()  # room again
        for _ in range(3):
            await asyncio.sleep(0)
        assert app.bus.outbound.qsize() == queued - 1  # nothing was left waiting to take it
        owner.tell("an ordinary notice")  # waits for room, and comes
        await app.bus.outbound.get()
        for _ in range(3):
            await asyncio.sleep(0)
        contents = []
        while not app.bus.outbound.empty():
            contents.append((await app.bus.outbound.get()).content)
        assert "short of memory" not in contents and contents[-1] == "an ordinary notice"
        assert owner.told == queued + 2

    run(main())
