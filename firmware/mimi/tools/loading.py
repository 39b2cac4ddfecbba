# The tools' boot: built-ins added from their data, the owner's /tools/tool_*.py found and checked. Used at
# boot, then let go (tools/__init__.py LET_GO): its tables and code cost no heap while the board runs.
import os
import sys

from mimi.storage.sessions import Sessions
from mimi.tools.lazy_tool import add_lazy
from mimi.tools.registry import after_turn_hook, bound_tools

USER_TOOL_PREFIX = "tool_"

# Built-in tool modules (each a tool, or exporting TOOLS); a missing one is reported and skipped.
BUILTINS = (
    "mimi.tools.clock",
    "mimi.tools.files",
    "mimi.tools.memory_tools",
    "mimi.tools.system",
    "mimi.tools.gpio",
    "mimi.tools.web",
    "mimi.tools.cron_tools",
    "mimi.tools.send_message",
    "mimi.tools.watch_tools",
    "mimi.tools.media_tools",
    "mimi.tools.finder",
)
# Every built-in's definitions are data from boot (builtin_defs.py, made by tools/tool_defs.py) and its code
# is imported at its first call: a board that never uses a tool never spends the heap (BENCHMARKS.md).
LAZY = BUILTINS
# Modules whose console commands are data too (builtin_defs.COMMANDS): added at boot, their module imported
# and set up at a command's first use (registry.add_commands).
LAZY_COMMANDS = ("mimi.tools.memory_tools", "mimi.tools.gpio", "mimi.tools.web", "mimi.watch.commands")
# Built-ins' after-turn hooks, added at boot whether the built-in is lazy or not: (built-in, the module whose
# after_turn(app, agent, message, session) runs after a saved turn, gate(app.sessions, channel, chat_id)):
# the module is imported only when its gate says it may have work. memory_tools: memory that consolidates
# itself (agent/consolidate.py), rare, told by the session file's line count; memory_tools' own code waits
# for its tools or command.
AFTER_TURN = (("mimi.tools.memory_tools", "mimi.agent.consolidate", Sessions.may_consolidate),)


def boot(registry, folder):
    """The built-ins and the owner's tools in `folder`; the boot's scope lets this module go after: nothing here is
    needed again (a tool added later is checked by tools/tool_check.py, registry.add)."""
    load_builtins(registry)
    discover(registry, folder)


def _add_module(registry, module, origin):
    for tool in bound_tools(module, registry.app):
        registry.add(tool, origin)


def load_builtins(registry, names=None):
    for name in BUILTINS if names is None else names:
        try:
            if name in LAZY:
                add_lazy(registry, name)
                if name in LAZY_COMMANDS:
                    registry.add_commands(name)
            else:
                _add_module(registry, __import__(name, None, None, ["_"]), "built-in")
            for owner, hook_module, gate in AFTER_TURN:
                if owner == name:
                    _add_after_turn(registry, hook_module, gate)
        except Exception as exc:  # one broken built-in must not take the others down
            registry._warn("tools: built-in {} failed to load: {}".format(name, exc))


def _add_after_turn(registry, module_name, gate):
    app = registry.app
    hooks = getattr(getattr(app, "agent", None), "after_turn", None)
    if hooks is not None:  # no agent (tests, tools/tool_defs.py): no hook, as before
        hooks.append(after_turn_hook(app, module_name, gate))  # registry's: a hook must not hold this module


def discover(registry, folder):
    """Load every tool_<name>.py in `folder` (the flash's /tools); broken ones are skipped with a warning."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return 0
    found = 0
    if folder not in sys.path:
        sys.path.append(folder)
    for file_name in names:
        if not (file_name.startswith(USER_TOOL_PREFIX) and file_name.endswith(".py")):
            continue
        module_name = file_name[:-3]
        try:
            module = __import__(module_name)
            before = len(registry.tools)
            _add_module(registry, module, folder + "/" + file_name)
            found += len(registry.tools) - before
        except Exception as exc:  # a syntax error or a crash at import: skip this file only
            registry._warn("tools: skipping {}/{}: {}: {}".format(folder, file_name, exc.__class__.__name__, exc))
    return found
