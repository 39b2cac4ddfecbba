# A request's bytes on their way out: gathered into one buffer and written with a time limit (net/http.py).
from mimi import platform
from mimi.platform import const

_SEND_CHUNK = const(1024)  # request bytes gathered into one write (fewer TCP segments; a 1 KB buffer finds a hole)


class Batch:
    """Request bytes gathered into one _SEND_CHUNK buffer made once and written when full: fewer, fuller TCP
    segments, and no buffer grown piece by piece (each growth a new block: holes in a small heap)."""

    def __init__(self, writer, seconds, host, timed):
        self.writer, self.seconds, self.host, self.timed = writer, seconds, host, timed
        self.buf = memoryview(bytearray(_SEND_CHUNK))
        self.n = 0

    async def add(self, data):
        size = len(data)
        if self.n + size > _SEND_CHUNK:
            await self.flush()
        if size > _SEND_CHUNK:
            await self._send(data, self.seconds())
        else:
            self.buf[self.n : self.n + size] = data
            self.n += size

    async def flush(self):
        if self.n:
            await self._send(platform.writable(self.buf[: self.n]), self.seconds())
            self.n = 0

    async def _send(self, data, seconds):
        if data:
            self.writer.write(data)
            await self.timed(self.writer.drain(), seconds, "sending to " + self.host)
