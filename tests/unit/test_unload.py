# Code let go after use on a small heap: a module is unloaded only where nothing else holds it (a holder would keep
# its copy and the next import make a second: twice the heap, and exception classes that no longer match), the
# HTTP client goes with the model clients after a call on such a board, the dispatcher keeps no reply while it
# waits for the next, a tool round lets go of the round before's reader before its tools run, and the tools' code
# goes after their round on such a board (but a module that keeps the board's state).
import gc
import sys

import asyncio
from support import run

from mimi import platform
from mimi.bus.message import Bus, Message
from mimi.channels.dispatch import Dispatcher

_TARGET = "held_fixture.target"
_HOLDERS = ("held_fixture.by_module", "held_fixture.by_class", "held_fixture.by_function", "held_fixture.by_instance")


def _load(name):
    __import__(name)
    return sys.modules[name]


def test_a_module_is_held_by_another_that_keeps_it_or_a_class_function_or_instance_of_it():
    _load(_TARGET)
    assert not platform.held_elsewhere(_TARGET)  # its package's attribute for it does not count
    for holder in _HOLDERS:
        _load(holder)
        assert platform.held_elsewhere(_TARGET), holder
        platform.unload(holder)
        assert not platform.held_elsewhere(_TARGET), holder
    platform.unload(_TARGET)
    assert not platform.held_elsewhere(_TARGET)  # not loaded: nothing to hold


def test_after_a_call_on_a_small_heap_the_http_client_goes_unless_another_part_holds_it():
    from mimi.llm import models as models_module
    from test_models import Client, Result, _config, _models

    shared = models_module._SHARED_MODULES
    models_module._SHARED_MODULES = (_TARGET,)  # the HTTP client's place, with holders this test controls
    try:
        models = _models(_config(), Client(Result(), Result(), Result(), Result()), None)
        _load(_TARGET)
        run(models.stream("s", [], None))
        assert _TARGET in sys.modules  # a board with PSRAM keeps it
        models.let_go = True
        run(models.stream("s", [], None))
        assert _TARGET not in sys.modules  # nothing else held it: gone with the clients
        _load(_TARGET)
        _load("held_fixture.by_class")  # as Telegram's sender keeps HTTPError
        run(models.stream("s", [], None))
        assert _TARGET in sys.modules  # held: kept, so the holder and the next call share one copy
        platform.unload("held_fixture.by_class")
        run(models.stream("s", [], None))
        assert _TARGET not in sys.modules
    finally:
        models_module._SHARED_MODULES = shared
        platform.unload(_TARGET)


class _Counting:
    def __init__(self):
        self.sent = 0

    async def send(self, message):
        self.sent += 1  # delivered; nothing of it kept


def _held_bytes():
    gc.collect()
    if hasattr(gc, "mem_alloc"):
        return gc.mem_alloc()
    import tracemalloc

    return tracemalloc.get_traced_memory()[0]


def _long_reply(bus):
    return bus.outbound.put(Message("cli", "console", "All about the garden. " * 3000))  # 66 KB


def test_the_dispatcher_keeps_no_reply_while_it_waits_for_the_next():
    tracing = not hasattr(gc, "mem_alloc")
    if tracing:
        import tracemalloc

        tracemalloc.start()

    async def main():
        bus, channel = Bus(), _Counting()
        task = asyncio.create_task(Dispatcher(bus, {"cli": channel}).run())
        await asyncio.sleep(0)
        before = _held_bytes()
        await _long_reply(bus)
        while not channel.sent:
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # back at the queue, waiting
        held = _held_bytes() - before
        task.cancel()
        return held

    try:
        held = run(main())
    finally:
        if tracing:
            tracemalloc.stop()
    assert held < 16 * 1024, held  # the 66 KB reply is not held between replies


class _Round:
    """A model call's result as the agent reads it; payload: the heap the real reader holds (its module's code)."""

    def __init__(self, stop_reason, text="", calls=(), payload=0):
        from mimi.llm.text import Text

        self.stop_reason, self.tool_calls, self.model = stop_reason, list(calls), "m"
        self.reply_text = Text([text] if text else [])
        self.payload = bytearray(payload)

    def blocks(self):
        return [dict(call) for call in self.tool_calls]


class _Models:
    def __init__(self, rounds):
        self.rounds = rounds

    async def stream(self, system, messages, tools=None, on_delta=None, tool_choice=None, model=None,
                     on_tool=None, max_tokens=None, route=None):
        return self.rounds.pop(0)


class _Context:
    def user_turn(self, content, channel, now):
        return {"role": "user", "content": content}

    def system_blocks(self, now=None, guest=False):
        return []


class _Registry:
    tools = {}

    def __init__(self, before):
        self.before, self.held = before, None

    async def execute(self, name, tool_input, turn):
        self.held = _held_bytes() - self.before[0]
        return "12:00", False


def test_a_tool_round_holds_nothing_of_the_round_before_while_its_tools_run():
    """The first round's reader is let go before the tools run (and the next call loads the clients again on a
    small heap): held, its module's code would be there twice during the next call."""
    from mimi.agent.loop import Agent

    tracing = not hasattr(gc, "mem_alloc")
    if tracing:
        import tracemalloc

        tracemalloc.start()
    before = [0]
    registry = _Registry(before)
    call = {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}}

    async def main():
        bus = Bus()
        rounds = [_Round("tool_use", "Let me look.", [call], payload=256 * 1024), _Round("end_turn", "It is noon.")]
        agent = Agent(bus, _Models(rounds), _Context(), None, {}, registry=registry)
        del rounds
        before[0] = _held_bytes() - 256 * 1024  # the first round's payload, still waiting to be returned
        await agent.handle(Message("cli", "console", "what time is it?", {"session": None}))
        return (await bus.outbound.get()).content

    try:
        reply = run(main())
    finally:
        if tracing:
            tracemalloc.stop()
    assert reply == "Let me look.\n\nIt is noon.", reply
    assert registry.held is not None and registry.held < 64 * 1024, registry.held


def test_the_registry_lets_go_of_the_tools_code_but_a_module_that_keeps_state_or_is_held():
    from mimi.tools.registry import Registry

    fixtures = ("held_fixture.tool_plain", "held_fixture.tool_stateful", "held_fixture.tool_held",
                "held_fixture.by_tool")
    registry = Registry()
    try:
        plain = registry.code(fixtures[0], "fixture_plain")
        registry.code(fixtures[1], "fixture_stateful")
        _load(fixtures[3])  # another module keeps tool_held: unloaded, it would be there twice
        registry.code(fixtures[2], "fixture_held")
        registry.let_go()
        assert fixtures[0] not in sys.modules and fixtures[0] not in registry._bound
        assert sorted(registry._bound) == [fixtures[2], fixtures[1]]
        assert fixtures[1] in sys.modules and fixtures[2] in sys.modules
        again = registry.code(fixtures[0], "fixture_plain")  # imported and bound again at its next call
        assert again is not plain and again.name == "fixture_plain" and fixtures[0] in sys.modules
        assert __import__("mimi.tools.gpio", None, None, ["_"]).KEEPS_STATE is True  # its driven pins outlive a turn
    finally:
        for name in fixtures:
            platform.unload(name)


class _Spy:
    """The registry as the agent sees it, counting let_go."""

    tools = {}

    def __init__(self):
        self.let_go_calls = 0

    async def execute(self, name, tool_input, turn):
        return "12:00", False

    def let_go(self):
        self.let_go_calls += 1


def test_on_a_small_heap_the_tools_code_goes_after_each_round_and_the_turn_code_after_the_turn():
    from mimi.agent.loop import Agent

    call = {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}}

    def turn(let_go):
        registry = _Spy()
        models = _Models([_Round("tool_use", "Let me look.", [call]), _Round("tool_use", "Again.", [call]),
                          _Round("end_turn", "Done.")])
        models.let_go = let_go

        async def main():
            bus = Bus()
            agent = Agent(bus, models, _Context(), None, {}, registry=registry)
            await agent.handle(Message("cli", "console", "what time is it?", {"session": None}))
            return (await bus.outbound.get()).content

        assert run(main()) == "Let me look.\n\nAgain.\n\nDone."
        return registry.let_go_calls

    assert turn(True) == 2  # after each round's tools
    # tools/turn.py is let go after the turn, unless another module keeps it (then it is its one copy)
    assert "mimi.tools.turn" not in sys.modules or platform.held_elsewhere("mimi.tools.turn")
    assert turn(False) == 0 and "mimi.tools.turn" in sys.modules  # a board with PSRAM keeps them
