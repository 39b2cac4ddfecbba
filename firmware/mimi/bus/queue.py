# A bounded asyncio queue for MicroPython (which has no asyncio.Queue); a full queue makes producers wait.
import asyncio


class QueueFull(Exception):
    pass


class Queue:
    def __init__(self, maxsize):
        self.maxsize = maxsize
        self._items = []
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    def qsize(self):
        return len(self._items)

    def empty(self):
        return not self._items

    def full(self):
        return len(self._items) >= self.maxsize

    def put_nowait(self, item):
        if self.full():
            raise QueueFull("queue full ({} items)".format(self.maxsize))
        self._items.append(item)
        self._readable.set()
        if self.full():
            self._writable.clear()

    async def put(self, item):
        """Wait for room (back-pressure), then enqueue."""
        while self.full():
            self._writable.clear()
            await self._writable.wait()
        self.put_nowait(item)

    def get_nowait(self):
        if not self._items:
            raise IndexError("queue empty")
        item = self._items.pop(0)
        if not self._items:
            self._readable.clear()
        self._writable.set()
        return item

    async def get(self):
        while not self._items:
            self._readable.clear()
            await self._readable.wait()
        return self.get_nowait()
