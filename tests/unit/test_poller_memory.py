# A MemoryError while an update is handled loses nothing: the update is left unconfirmed, with those after it,
# and taken again at the next poll; one that keeps failing is given up after SHORT_TRIES (told, not looped).
import asyncio

from support import run

from mimi.health import memory_errors
from mimi.telegram import poller as poller_module
from mimi.telegram.poller import SHORT_TRIES, Poller


class _Batches:
    """getUpdates answering, from the offset asked, every update not confirmed yet (Telegram's rule)."""

    def __init__(self, ids):
        self.ids, self.offsets = ids, []

    def has_token(self):
        return True

    async def call(self, method, params=None, read_timeout=20, give_way=None, wait=True):
        self.offsets.append(params["offset"])
        await asyncio.sleep(0.01)
        return [{"update_id": i, "message": {"text": "m{}".format(i)}} for i in self.ids if i >= params["offset"]]


def _poll(ids, fails, polls):
    """Run a poller until `polls` getUpdates calls; fails: {update_id: MemoryErrors to raise}. (handled, offsets),
    update ids and offsets counted from the offset the poller starts from (kept in NVS by earlier tests)."""
    handled, left = [], dict(fails)
    api = _Batches([])
    poller = Poller(api, lambda update: handle(update))
    base = poller.offset
    api.ids = [base + i for i in ids]

    async def handle(update):
        update_id = update["update_id"] - base
        if left.get(update_id):
            left[update_id] -= 1
            raise MemoryError("memory allocation failed, allocating 2560 bytes")
        handled.append(update_id)
        return True

    async def main():
        task = asyncio.create_task(poller.run())
        try:
            for _ in range(400):
                await asyncio.sleep(0.01)
                if len(api.offsets) >= polls:
                    break
        finally:
            task.cancel()

    saved = memory_errors.AGAIN_S
    memory_errors.AGAIN_S = 0
    try:
        run(main())
    finally:
        memory_errors.AGAIN_S = saved
    return handled, [offset - base for offset in api.offsets]


def test_an_update_cut_by_a_memory_error_comes_again_and_is_answered_once():
    handled, offsets = _poll([5, 6, 7], {6: 1}, 4)
    assert handled == [5, 6, 7]  # 6 again after its MemoryError, 7 only after it: each once
    assert offsets[:3] == [0, 6, 8]  # 5 confirmed, 6 left unconfirmed until it was answered


def test_an_update_that_keeps_failing_is_given_up_after_the_tries():
    handled, offsets = _poll([5, 6], {6: 99}, SHORT_TRIES + 2)
    assert handled == [5]
    assert offsets[:SHORT_TRIES + 1] == [0] + [6] * (SHORT_TRIES - 1) + [7]
    assert poller_module.SHORT_TRIES == SHORT_TRIES >= 2
