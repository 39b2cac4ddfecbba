# The tool registry: the tools the board has (added at boot by tools/loading.py), inputs checked, run with limits.
import asyncio
import json
import sys

from mimi import heap, platform
from mimi.platform import const
from mimi.jsontext import Streamed
from mimi.tools.lazy_tool import LazyTool

_TOOL_TIMEOUT_S = const(30)
# The core tools every request offers (docs/models.md), find_tools first: it finds the others (tools/finder.py).
FIND_TOOLS = "find_tools"
CORE = (FIND_TOOLS, "get_current_time", "read_file", "recall", "remember")
RESULT_MAX = const(8192)  # characters of a tool result sent back to the model

_JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


class ToolError(Exception):
    """An expected failure: its message goes to the model as the tool result (is_error)."""


class Tool:
    """A built-in tool: its module lists the class in TOOLS, and the registry makes it with the app at the
    module's first use (bound_tools). Class attributes: name, description, schema and its safety facts,
    tier (safety/roles.py), acting (the breaker counts it) and level (its default autonomy level), which
    tools/tool_defs.py copies into builtin_defs.DEFS. A tool whose run() needs the turn it serves (the chat,
    the role) sets wants_turn = True and gets run(input, turn)."""

    wants_turn = False

    def __init__(self, app):
        self.app = app


def check_input(schema, data):
    """The first way `data` breaks the schema's required keys and basic types, or None."""
    if not isinstance(data, dict):
        return "input must be a JSON object"
    for key in schema.get("required", ()):
        if key not in data:
            return "missing required field '{}'".format(key)
    properties = schema.get("properties", {})
    for key in data:
        spec = properties.get(key)
        if not isinstance(spec, dict) or "type" not in spec:
            continue
        kinds = _JSON_TYPES.get(spec["type"])
        value = data[key]
        if kinds and (not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool))):
            return "field '{}' must be of type {}".format(key, spec["type"])
        if "enum" in spec and value not in spec["enum"]:
            return "field '{}' must be one of {}".format(key, ", ".join(str(v) for v in spec["enum"]))
    return None


class Registry:
    def __init__(self, app=None):
        self.app = app
        self.tools = {}
        self._bound = {}  # module name -> its tools bound to the app, for the modules loaded now
        self._set_up = []  # modules whose setup(app) ran this boot: once, however often their code is loaded
        self.warnings = []
        self._definitions = None
        # [safety] objects with before(name, data, tool, turn) -> refusal|None, optional admit(...) (the same,
        # once the approvers let the call through) and after(name, data, text, is_error, took_ms, turn)
        self.guards = []
        # [safety] objects with async approve(name, data, tool, turn) -> refusal|None, asked after the guards
        # let a call through (roles, autonomy levels, confirmations). An approver may also have async
        # ran(name, data, tool, text, is_error, turn), awaited after a call it let through.
        self.approvers = []

    def add(self, tool, origin="built-in"):
        problem = None  # a LazyTool's definition and safety facts (DEFS) are checked by its tests
        if not isinstance(tool, LazyTool):  # an owner's tool at boot, or one added later (mqtt's): rare
            from mimi.tools.tool_check import check_tool

            problem = check_tool(tool)  # and its tier, acting flag and level filled in where it says none
        if problem is None and tool.name in self.tools:
            problem = "a tool named '{}' already exists".format(tool.name)
        if problem:
            self._warn("tools: skipping {} ({}): {}".format(getattr(tool, "name", "?"), origin, problem))
            return False
        self.tools[tool.name] = tool
        self._definitions = None
        return True

    def remove(self, name):
        """Take a tool out (an MCP server's tool that is gone); False when there was none."""
        if self.tools.pop(name, None) is None:
            return False
        self._definitions = None
        return True

    def _warn(self, text):
        self.warnings.append(text)
        platform.log(text)

    def add_commands(self, module_name):
        """The module's console commands (builtin_defs.COMMANDS, a copy of its COMMANDS), its code imported at
        the first one typed."""
        from mimi.tools.builtin_defs import COMMANDS

        if self.app is None:  # no app, no console: as setup(app) is skipped then
            return
        self.app.console.commands.add_lines(COMMANDS, module_name)

    def code(self, module_name, tool_name):
        """The real tool behind a LazyTool, bound to the app: its module imported at the first need (in a tool
        call's scope), its setup(app) run once a boot."""
        if module_name not in self._bound or module_name not in sys.modules:  # new, or let go since
            module = __import__(module_name, None, None, ["_"])
            first = module_name not in self._set_up
            if first and hasattr(module, "setup"):
                self._set_up.append(module_name)
            self._bound[module_name] = bound_tools(module, self.app, first)
        for tool in self._bound[module_name]:
            if tool.name == tool_name:
                return tool
        raise ToolError("{} is missing from {}".format(tool_name, module_name))

    def _unbound(self):
        """The tools of modules the heap let go (mimi/heap.py) forgotten too: nothing keeps their code."""
        for name in [name for name in self._bound if name not in sys.modules]:
            del self._bound[name]

    def definitions(self):
        """API tool definitions in a stable (sorted) order, built once, so prompt caching keeps working: a
        built-in's is its LazyTool (its encoded JSON, written as it is), a user tool's a dict."""
        if self._definitions is None:
            self._definitions = [_definition(self.tools[name]) for name in sorted(self.tools)]
        return self._definitions

    def offered(self, found=()):
        """The definitions a request offers: the core tools (CORE: find_tools first) and those find_tools found this
        turn (tools/finder.py), made for the call."""
        return [d for d in self.definitions() if _name_of(d) in CORE or _name_of(d) in found]

    async def execute(self, name, data, turn):
        """Run one tool for a turn (tools/turn.py: the chat it answers in and the role it acts with), whoever asks
        (the agent, the console, a watcher, a rule, an MCP client), in a tool call's scope: on a tight heap the
        tools' code goes when the last call under way in any task ends (mimi/heap.py). (result_text, is_error).
        Never raises."""
        with heap.scope("tool"):
            outcome = await self._checked(name, data, turn)
        self._unbound()
        return outcome

    async def _checked(self, name, data, turn):  # [safety] guards see every call: breaker before, audit after
        started, refusal = platform.ticks_ms(), None
        tool = self.tools.get(name)
        for guard in self.guards:
            refusal = refusal or _guarded(guard.before, name, data, tool, turn)
        for approver in self.approvers:
            if refusal:
                break
            try:
                refusal = await approver.approve(name, data, tool, turn)
            except Exception as exc:  # a broken approver refuses: never run an unchecked call
                refusal = "{} was not run: its safety check failed ({})".format(name, exc)
        for guard in self.guards if not refusal else ():
            admit = getattr(guard, "admit", None)  # e.g. the breaker counts only calls that will run
            if admit is not None:
                refusal = refusal or _guarded(admit, name, data, tool, turn)
        text, is_error = (refusal, True) if refusal else await self._run(tool, name, data, turn)
        for approver in self.approvers if not refusal else ():
            ran = getattr(approver, "ran", None)  # e.g. the policy's "I ran gpio_write" report
            if ran is not None:
                try:
                    await ran(name, data, tool, text, is_error, turn)
                except Exception as exc:
                    platform.log("tools: after-call check failed: {}: {}".format(exc.__class__.__name__, exc))
        took = platform.ticks_diff(platform.ticks_ms(), started)
        for guard in self.guards:
            _guarded(guard.after, name, data, text, is_error, took, turn)
        return text, is_error

    async def _run(self, tool, name, data, turn):
        if tool is None:
            return "unknown tool '{}'".format(name), True
        problem = check_input(tool.schema, data)
        if problem:
            return "invalid input for {}: {}".format(name, problem), True
        started = platform.ticks_ms()
        limit = getattr(tool, "timeout_s", _TOOL_TIMEOUT_S)  # a tool may bound itself (MCP: mcp_config.timeout_s)
        try:
            result = run(code_of(tool), data, turn)
            if hasattr(result, "send") or hasattr(result, "__await__"):  # async run()
                result = await asyncio.wait_for(result, limit)
        except asyncio.TimeoutError:
            return "{} timed out after {} s".format(name, limit), True
        except ToolError as exc:
            return self._outside(str(exc) or "{} failed".format(name)), True
        except Exception as exc:
            return self._outside("{} failed: {}: {}".format(name, exc.__class__.__name__, exc)), True
        text = result if isinstance(result, str) else json.dumps(result)
        cut = len(text) > RESULT_MAX
        text = self._outside(text)
        if cut:
            text += "\n[result cut at {} characters]".format(RESULT_MAX)
        took = platform.ticks_diff(platform.ticks_ms(), started)
        if took > 2000:
            platform.log("tools: {} took {} ms".format(name, took))
        return text, False

    def _outside(self, text):
        """A tool's words as the model, the chat, the console and the audit log get them: every secret masked
        (a page, an MCP server's answer or a service's error may quote one), cut at RESULT_MAX after. The masking's
        code loads at the first tool call: a board that runs none never holds it."""
        from mimi.safety import masking

        return masking.outside(text, masking.of_app(self.app), RESULT_MAX)


def code_of(tool):
    """The tool's code: a built-in's (LazyTool) module imported and set up at its first call."""
    return tool.code() if isinstance(tool, LazyTool) else tool


def run(tool, data, turn):
    """tool.run(data), or tool.run(data, turn) for a tool that says it wants the turn (`wants_turn = True`):
    the owner's tool_<name>.py keeps the plain run(input); a result, or a coroutine the caller awaits."""
    return tool.run(data, turn) if getattr(tool, "wants_turn", False) else tool.run(data)


def bound_tools(module, app, set_up=True):
    """A tool module's tools, bound to the app, once its optional setup(app) ran (set_up: the first time a boot):
    its TOOLS, a class there made with the app (a built-in's Tool), else the module itself as one tool (an owner's
    tool_<name>.py)."""
    setup = getattr(module, "setup", None)
    if setup is not None and app is not None and set_up:
        setup(app)
    tools = getattr(module, "TOOLS", None)
    if tools is None:
        return (module,)
    return [tool(app) if isinstance(tool, type) else tool for tool in tools]


def _name_of(definition):
    return definition["name"] if isinstance(definition, dict) else definition.name


def _definition(tool):
    if isinstance(tool, Streamed):  # kept encoded: a built-in's LazyTool, an MCP server's tool
        return tool
    return {"name": tool.name, "description": tool.description, "input_schema": tool.schema}


def after_turn_hook(app, module_name, gate):
    """A hook for agent.after_turn (tools/loading.py AFTER_TURN): kept here, as the hooks live on after boot."""
    async def hook(agent, message, session):
        if gate(app.sessions, session[0], session[1]):
            await __import__(module_name, None, None, ["_"]).after_turn(app, agent, message, session)

    return hook


def _guarded(fn, *args):  # [safety] a broken guard is reported, never fails the tool call
    try:
        return fn(*args)
    except Exception as exc:
        platform.log("tools: guard failed: {}: {}".format(exc.__class__.__name__, exc))
        return None
