# A pin edge for a local rule: the pin's interrupt handed to asyncio, debounced, then to the rule engine.
import asyncio

from mimi import platform
from mimi.health import memory_errors


class Edge:
    """A pin's interrupt handed to asyncio (ThreadSafeFlag): nothing is allocated in the handler; the task
    takes an edge at most every debounce_ms and hands it to the rule."""

    def __init__(self, rules, name, pin, edge, debounce_ms):
        import machine

        self.rules, self.name, self.edge, self.debounce_ms = rules, name, edge, debounce_ms
        self.at = [platform.ticks_ms()]  # ticks_ms of the latest interrupt: written in the handler, no allocation
        self.flag = platform.thread_safe_flag()
        self.pin = machine.Pin(pin, machine.Pin.IN)
        trigger = {"rising": machine.Pin.IRQ_RISING, "falling": machine.Pin.IRQ_FALLING}.get(
            edge, machine.Pin.IRQ_RISING | machine.Pin.IRQ_FALLING)
        self.pin.irq(self._interrupt, trigger)
        self.task = asyncio.create_task(memory_errors.lasting("watchers", self._run))

    def _interrupt(self, pin):
        self.at[0] = platform.ticks_ms()
        self.flag.set()

    async def _run(self):
        taken = None
        while True:
            await self.flag.wait()
            at = self.at[0]
            if taken is not None and platform.ticks_diff(at, taken) < self.debounce_ms:
                continue
            taken = at
            value = 1 if self.edge == "rising" else 0 if self.edge == "falling" else self.pin.value()
            try:
                watcher = self.rules.service.store.get(self.name)
                await self.rules.event(watcher, value)
            except MemoryError as exc:
                memory_errors.short("watchers", exc)
            except Exception as exc:  # one broken rule must not stop the pin's task
                platform.log("watch: rule {} failed: {}".format(self.name, exc))

    def close(self):
        self.pin.irq(None)
        self.task.cancel()
