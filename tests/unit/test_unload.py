# Code let go after use on a tight heap (mimi/heap.py), from the outside: the HTTP client goes with a model call's
# code unless a loaded module keeps it, the tools' code goes once no call in any task uses it (the board's driven
# pins stay, a module's setup runs once a boot), calls at once from the agent, a watcher, a rule and an MCP client
# never lose their code under them; and the dispatcher keeps no reply while it waits for the next, a tool round
# lets go of the round before's reader before its tools run.
import gc
import sys

import asyncio
from support import run

from mimi import heap
from mimi.bus.message import Bus, Message
from mimi.channels.dispatch import Dispatcher


def _loaded(name):
    return name in sys.modules


def _tight(flag):
    heap.choose(1024 * 1024 if flag else 8 * 1024 * 1024)  # a board without PSRAM, or with


def _as_found():
    heap.choose(8 * 1024 * 1024)  # roomy, as before a boot chose (heap.py): as the other tests find it


_TARGET = "held_fixture.target"  # declared with a model call's scope, as the HTTP client is (net/__init__.py)
_HOLDERS = ("held_fixture.by_module", "held_fixture.by_class", "held_fixture.by_function", "held_fixture.by_instance")


def test_after_a_call_on_a_tight_heap_a_shared_module_goes_unless_a_loaded_module_keeps_it():
    """As the HTTP client: let go with a call's code, unless a module of its package keeps it, or a class, function
    or instance of it, at its top level (Telegram's sender keeps HTTPError): unloaded then, the holder would keep
    its copy and the next import make a second. The fixtures are modules no other test imports."""
    from test_models import Client, Result, _config, _models

    models = _models(_config(), Client(*[Result() for _ in range(2 + 2 * len(_HOLDERS))]), None)
    try:
        __import__(_TARGET)
        _tight(False)
        run(models.stream("s", []))
        assert _loaded(_TARGET)  # a board with PSRAM keeps it
        _tight(True)
        run(models.stream("s", []))
        assert not _loaded(_TARGET)  # nothing else keeps it: gone with the call's code
        for holder in _HOLDERS:
            __import__(holder)
            run(models.stream("s", []))
            assert _loaded(_TARGET), holder  # kept: the holder and the next call share its one copy
            heap.forget(holder)
            run(models.stream("s", []))
            assert not _loaded(_TARGET), holder
    finally:
        _as_found()
        for name in (_TARGET,) + _HOLDERS:
            heap.forget(name)


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

    async def stream(self, system, messages, *, tools=None, on_delta=None, tool_choice=None, model=None,
                     on_tool=None, max_tokens=None, route=None, fitting=None):
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




def _app(tag):
    from stub_app import stub_app

    app = stub_app(tag)
    app.config.set("tool_config", "gpio_allow", "5")
    app.fixture_set_up, app.fixture_ran = 0, []
    app.fixture_go = asyncio.Event()
    return app


def test_on_a_tight_heap_the_tools_code_goes_after_its_call_and_the_boards_driven_pins_stay():
    from support import remove_tree

    from mimi.tools import turn
    from mimi.tools.loading import load_builtins
    from mimi.tools.registry import Registry

    app = _app("unload_gpio")
    registry = Registry(app)
    load_builtins(registry, ["mimi.tools.gpio"])
    owner = turn.console()
    try:
        _tight(True)
        assert run(registry.execute("gpio_write", {"pin": 5, "value": 1}, owner)) == ('{"pin": 5, "value": 1}', False)
        assert not _loaded("mimi.tools.gpio")  # no call under way: its code went
        read = run(registry.execute("gpio_read", {"pin": 5}, owner))  # loaded again: the pin is still driven
        assert read == ('{"pin": 5, "value": 1, "mode": "output"}', False), read
        _tight(False)
        run(registry.execute("gpio_read", {"pin": 5}, owner))
        assert _loaded("mimi.tools.gpio")  # a board with PSRAM keeps it for the next call
    finally:
        _as_found()
        heap.forget("mimi.tools.gpio")
        remove_tree(app.top)


def _fixture_tools(registry):
    from mimi.tools.lazy_tool import LazyTool

    class Lazy(LazyTool):  # a built-in held as data, as builtin_defs' lines make them: its code loaded at its call
        schema = {"type": "object", "properties": {}}
        description, tier, acting, level = "a fixture", "observer", False, "autonomous"

        def __init__(self, name):
            self._registry, self._name = registry, name

        @property
        def name(self):
            return self._name

        def code(self):
            return self._registry.code("held_fixture.tool_setup", self._name)

    for name in ("fixture_slow", "fixture_quick"):
        registry.add(Lazy(name))


def _held_now():
    gc.collect()
    if hasattr(gc, "mem_alloc"):
        return gc.mem_alloc()
    import tracemalloc

    return tracemalloc.get_traced_memory()[0]


def test_calls_at_once_from_the_agent_a_watcher_a_rule_and_an_mcp_client_never_lose_their_code():
    """The agent's tool round ends while a watcher's reading, a rule's action and an MCP client's call still run
    the same tool module: its code stays until the last of them is done, then goes (a tight heap); its setup(app)
    runs once a boot however often it is loaded; no call fails; the heap is back where it was."""
    from support import remove_tree

    from mimi.agent.loop import Agent
    from mimi.tools.registry import Registry
    from mimi.tools.turn import Turn

    tracing = not hasattr(gc, "mem_alloc")
    if tracing:
        import tracemalloc

        tracemalloc.start()
    app = _app("unload_at_once")
    registry = Registry(app)
    _fixture_tools(registry)
    module = "held_fixture.tool_setup"
    # Each caller's turn as it makes it: watch/sources.py turn_of, watch/rules.py _fire, mcp/server_tools.py call.
    callers = (Turn("telegram", "42", {"watcher": "greenhouse"}, "owner"),
               Turn("telegram", "42", {"rule": "heat", "role": "owner"}, "owner"),
               Turn("mcp", "127-0-0-1_abc123", {"mcp": "127-0-0-1_abc123", "role": "observer"}, "observer"))
    call = {"type": "tool_use", "id": "toolu_1", "name": "fixture_quick", "input": {}}

    async def main():
        app.fixture_ran, app.fixture_go = [], asyncio.Event()
        waiting = [asyncio.create_task(registry.execute("fixture_slow", {}, turn)) for turn in callers]
        while len(app.fixture_ran) < len(callers):  # all three run, waiting
            await asyncio.sleep(0)
        bus = Bus()
        agent = Agent(bus, _Models([_Round("tool_use", "Let me look.", [call]), _Round("end_turn", "Done.")]),
                      _Context(), None, {}, registry=registry)
        await agent.handle(Message("cli", "console", "run the quick one", {"session": None}))
        reply = (await bus.outbound.get()).content
        assert _loaded(module), "let go under three running calls"
        again = await registry.execute("fixture_quick", {}, callers[2])  # the MCP client again, meanwhile
        app.fixture_go.set()
        outcomes = []
        for task in waiting:  # no await inside a comprehension: MicroPython has none
            outcomes.append(await task)
        assert reply == "Let me look.\n\nDone." and again == ("done", False), (reply, again)
        assert [o[1] for o in outcomes] == [False, False, False], outcomes  # no call failed

    try:
        _tight(True)
        before = _held_now()
        run(main())
        assert app.fixture_set_up == 1  # its setup ran once, not at each load
        assert not _loaded(module) and registry._bound == {}  # the last call done: its code went
        first = _held_now()
        run(main())  # the same again: loaded again, not set up again, nothing more left behind
        assert app.fixture_set_up == 1 and not _loaded(module)
        again = _held_now()
        assert again - first < 2 * 1024, (first - before, again - first)
        if not tracing:  # the unix port's heap: back where it was (CPython's own caches grow at a first run)
            assert first - before < 8 * 1024, first - before
    finally:
        _as_found()
        heap.forget(module)
        remove_tree(app.top)
        if tracing:
            tracemalloc.stop()
