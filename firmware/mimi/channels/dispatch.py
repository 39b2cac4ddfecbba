# Routes every outbound reply to the channel it came from; a failing channel never stops the others.
import asyncio

from mimi import platform
from mimi.health import memory_errors


class Dispatcher:
    def __init__(self, bus, channels):
        self.bus = bus
        self.channels = channels
        self.sent = 0
        self.failed = 0

    async def run(self):
        while True:
            try:
                # The reply is delivered in a call of its own: nothing of it (a long text: kilobytes) is kept while
                # the loop waits for the next one.
                await self._deliver(await self.bus.outbound.get())
            except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
                memory_errors.short("dispatcher", exc)
                await asyncio.sleep(memory_errors.AGAIN_S)

    async def _deliver(self, message):
        channel = self.channels.get(message.channel)
        if channel is None:
            self.failed += 1
            platform.log("dispatch: no channel '{}' for a reply to {}".format(message.channel, message.chat_id))
            return
        try:
            await channel.send(message)
            self.sent += 1
        except MemoryError as exc:  # the reply is lost; the owner is told (health/memory_errors.py)
            self.failed += 1
            memory_errors.short("dispatcher", exc)
        except Exception as exc:
            self.failed += 1
            platform.log("dispatch: {} could not deliver to {}: {}".format(message.channel, message.chat_id, exc))
            platform.print_exception(exc)
