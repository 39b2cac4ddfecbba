# The bus queue: FIFO, bounded, back-pressure instead of loss.
import asyncio

from support import raises, run

from mimi.bus.message import Bus, Message
from mimi.bus.queue import Queue, QueueFull


def test_fifo_order():
    q = Queue(3)
    for i in range(3):
        q.put_nowait(i)
    assert [q.get_nowait() for _ in range(3)] == [0, 1, 2]


def test_put_nowait_on_full_queue_raises_instead_of_dropping():
    q = Queue(2)
    q.put_nowait("a")
    q.put_nowait("b")
    raises(QueueFull, q.put_nowait, "c")
    assert q.qsize() == 2 and q.get_nowait() == "a"


def test_full_queue_makes_producer_wait_and_loses_nothing():
    async def main():
        q = Queue(2)
        produced = []

        async def producer():
            for i in range(10):
                await q.put(i)
                produced.append(i)

        task = asyncio.create_task(producer())
        await asyncio.sleep(0.05)
        assert produced == [0, 1]  # blocked on the third put: back-pressure
        got = []
        for _ in range(10):
            got.append(await q.get())
        await task
        return got

    assert run(main()) == list(range(10))


def test_consumer_waits_for_items():
    async def main():
        q = Queue(8)

        async def later():
            await asyncio.sleep(0.02)
            await q.put("late")

        asyncio.create_task(later())
        return await asyncio.wait_for(q.get(), 2)

    assert run(main()) == "late"


def test_bus_has_two_queues_of_depth_8():
    bus = Bus()
    assert bus.inbound.maxsize == 8 and bus.outbound.maxsize == 8
    m = Message("cli", 7, "hi")
    assert m.chat_id == "7" and m.channel == "cli"
    raises(ValueError, Message, "pigeon", 1, "x")
