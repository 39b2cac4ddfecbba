# Small-board mode's one TLS session at a time: calls take turns, a long poll gives way and resumes.
import asyncio

import esp32
from mimi import board
from mimi.settings import Config
from mimi.net.tls_gate import Busy, Gate
from mimi.telegram.poller import Poller
from support import run


def _mode(small):
    esp32.set_flash_dir(None)
    board.choose(Config(), heap=(300 if small else 4096) * 1024)


async def _hold(gate, log, name, seconds, give_way=None):
    await gate.take(give_way)
    log.append(name + " in")
    await asyncio.sleep(seconds)
    log.append(name + " out")
    gate.release()


def test_off_the_mode_holds_nothing_and_nobody_waits():
    _mode(False)
    gate = Gate()

    async def main():
        assert await gate.take() is False
        assert await gate.take() is False
        assert not gate.busy()

    run(main())


def test_in_the_mode_sessions_take_turns_in_order():
    _mode(True)
    gate, log = Gate(), []

    async def main():
        await asyncio.gather(_hold(gate, log, "a", 0.05), _hold(gate, log, "b", 0.01), _hold(gate, log, "c", 0))

    try:
        run(main())
    finally:
        _mode(False)
    assert log == ["a in", "a out", "b in", "b out", "c in", "c out"]
    assert gate.waited == 2 and not gate.busy()


def test_a_standing_session_gives_way_to_a_call_and_a_preview_never_waits_behind_one():
    _mode(True)
    gate, log = Gate(), []

    async def main():
        cut = asyncio.Event()
        await gate.take(cut.set)  # a long poll
        waiting = asyncio.create_task(_hold(gate, log, "claude", 0.05))
        await asyncio.wait_for(cut.wait(), 1)  # told at once
        assert gate.cuts == 1
        gate.release()  # the poll closes its connection
        await asyncio.sleep(0.01)
        assert log == ["claude in"]
        try:
            await gate.take(wait=False)  # a live draft while Claude streams: not sent, not queued
            raise AssertionError("a preview waited behind Claude")
        except Busy:
            pass
        await waiting
        assert await gate.take(wait=False) is True  # free again: it goes out
        gate.release()

    try:
        run(main())
    finally:
        _mode(False)


class _LongPolls:
    """getUpdates as Telegram answers it: held open until an update comes; the gate taken like http.request."""

    def __init__(self, gate):
        self.gate, self.offsets, self.update = gate, [], asyncio.Event()

    def has_token(self):
        return True

    async def call(self, method, params=None, read_timeout=20, give_way=None, wait=True):
        await self.gate.take(give_way, wait)
        try:
            self.offsets.append(params["offset"])
            await self.update.wait()
            self.update.clear()
            return [{"update_id": 7, "message": {"text": "hi"}}]
        finally:
            self.gate.release()


def test_telegrams_long_poll_yields_while_claude_streams_and_resumes_after():
    _mode(True)
    gate, handled = Gate(), []

    async def main():
        api = _LongPolls(gate)
        poller = Poller(api, _handled)
        task = asyncio.create_task(poller.run())
        try:
            await asyncio.sleep(0.02)
            assert api.offsets == [0] and gate.busy()
            log = []
            await asyncio.wait_for(_hold(gate, log, "claude", 0.05), 2)  # the stream needs the session: the poll is cut
            assert log == ["claude in", "claude out"] and poller.gave_way == 1
            await asyncio.sleep(0.02)
            assert api.offsets == [0, 0]  # polling again, nothing confirmed, nothing lost
            api.update.set()
            for _ in range(50):
                await asyncio.sleep(0.01)
                if handled:
                    break
            assert handled == [7]
        finally:
            task.cancel()

    async def _handled(update):
        handled.append(update["update_id"])
        return True

    try:
        run(main())
    finally:
        _mode(False)


def test_a_call_that_comes_while_a_standing_session_waits_its_turn_goes_first():
    _mode(True)
    gate, log = Gate(), []

    async def standing():
        await gate.take(lambda: log.append("told to give way"))
        log.append("poll in")
        gate.release()

    async def main():
        await gate.take()  # Claude streams
        poll = asyncio.create_task(standing())  # the poll waits its turn
        await asyncio.sleep(0.01)
        summary = asyncio.create_task(_hold(gate, log, "summary", 0))  # another call: nobody standing to tell
        await asyncio.sleep(0.01)
        gate.release()
        await asyncio.wait_for(asyncio.gather(poll, summary), 2)

    try:
        run(main())
    finally:
        _mode(False)
    assert log == ["summary in", "summary out", "poll in"]


def test_the_lock_is_made_when_the_mode_is_chosen_not_at_the_first_session():
    esp32.set_flash_dir(None)
    cfg, gate = Config(), Gate()
    try:
        board.follow(cfg, gate.prepare)
        assert gate._lock is None  # a roomy board never makes it
        cfg.set("system", "small_board", "on")  # config_set: MicroPython's asyncio imports Lock's module now
        assert gate._lock is not None
    finally:
        cfg.set("system", "small_board", "auto")
        _mode(False)
