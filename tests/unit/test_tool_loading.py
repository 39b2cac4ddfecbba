# The tools' boot (tools/loading.py): once done it lets its code go, and the tools it added still work.
import gc
import os
import sys

from stub_app import Holder, stub_app
from support import NotImported, remove_tree, run, write

from mimi import heap
from mimi.tools.turn import console
from mimi.tools.registry import Registry

LOADING = "mimi.tools.loading"
DICE = """name = "roll_dice"
description = "Roll a die."
schema = {"type": "object", "properties": {"sides": {"type": "integer"}}, "required": []}


def run(input):
    return str(input.get("sides", 6))
"""


class _Nameless:
    name = "no name"
    description = "A tool added after boot with a bad name."
    schema = {"type": "object"}

    def run(self, input):
        return "ran"


def _function_ref(module):
    """A weak reference to one of the module's functions (a function holds all of its module's globals),
    where the runtime has weak references; MicroPython: the ROMFS heap measurement shows it instead."""
    try:
        import weakref
    except ImportError:
        return lambda: None
    return weakref.ref(module.discover)


def test_the_boot_lets_its_code_go_and_the_tools_it_added_work():
    app = stub_app("loading")
    folder = app.top + "/tools"
    os.mkdir(folder)
    write(folder + "/tool_dice.py", DICE)
    write(folder + "/tool_broken.py", "def run(:\n")
    app.agent = Holder()
    app.agent.after_turn = []
    app.registry = tools = Registry(app)
    try:
        with NotImported(LOADING):
            held = _function_ref(__import__(LOADING, None, None, ["_"]))
            with heap.scope("boot"):  # as the App's boot runs it
                sys.modules[LOADING].boot(tools, folder)
            gc.collect()
            assert LOADING not in sys.modules and not hasattr(sys.modules["mimi.tools"], "loading")
            assert held() is None  # nothing holds its functions, nor so their module's globals
        owner = console()
        assert run(tools.execute("roll_dice", {"sides": 3}, owner)) == ("3", False)  # the owner's tool
        text, is_error = run(tools.execute("get_current_time", {}, owner))  # a built-in, its code loaded now
        assert not is_error and "utc" in text
        skipped = [warning for warning in tools.warnings if warning.startswith("tools: skipping ")]
        assert len(skipped) == 1 and skipped[0].startswith("tools: skipping {}/tool_broken.py: SyntaxError"
                                                           .format(folder)), tools.warnings
        assert len(app.agent.after_turn) == 1  # memory consolidation's hook
        assert not tools.add(_Nameless())  # a tool added after boot (mqtt's) is still checked
        assert tools.warnings[-1] == ("tools: skipping no name (built-in): its name must be 1-64 characters"
                                      " of letters, digits, _ or -")
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
        for name in ("tool_dice", "tool_broken"):
            sys.modules.pop(name, None)
        remove_tree(app.top)
