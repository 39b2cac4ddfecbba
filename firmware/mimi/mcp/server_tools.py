# The MCP server's tools: the registry's tools as MCP clients see them, plus `ask` (a turn of the board's own
# agent); every call runs through the registry's guards and approvers, with the role mcp_role names.
import json

from mimi.bus.message import MCP
from mimi.mcp.server_rpc import INVALID_PARAMS, RpcError
from mimi.platform import const, log
from mimi.tools.lazy_tool import LazyTool
from mimi.tools.registry import FIND_TOOLS
from mimi.tools.turn import Turn

CALLS_MAX = const(2)  # registry tool calls of MCP clients running at once; another is told to try again
_NAME_SHOWN_MAX = const(64)  # an unknown tool's name is quoted back at most this long
REMOTE_PREFIX = "mcp__"  # other MCP servers' tools (mcp/client.py): the board does not pass them on
ASK_NAME = "ask"
# ask's definition, as tools/list writes it (a bytes constant stays in flash).
ASK = (
    b'{"name": "ask", "description": "Ask the board\'s own agent (Claude with the board\'s memory, skills and '
    b'tools) and get its answer. Each MCP client has its own conversation with it (session mcp_<client>); a '
    b'question costs tokens and counts against the board\'s budgets.", "inputSchema": {"type": "object", '
    b'"properties": {"text": {"type": "string", "description": "what to ask or tell the agent"}}, '
    b'"required": ["text"]}, "annotations": {"readOnlyHint": false, "openWorldHint": true}}'
)
_MCP_SCHEMA_KEY = b'"inputSchema": '  # the schema's key as MCP names it
_READS = b', "annotations": {"readOnlyHint": true}}'  # a definition's end: whether the tool changes the world
_ACTS = b', "annotations": {"readOnlyHint": false}}'
_HEAD = b'{"tools": ['
_SEPARATOR = b", "


def offered(name):
    """A tool MCP clients see: not another server's, not ask (listed on its own), not find_tools (a client is given
    every tool: finding them is for the board's own model)."""
    return not name.startswith(REMOTE_PREFIX) and name != ASK_NAME and name != FIND_TOOLS


def _plain(tool):
    """A tool held as an object (an owner's tool, mqtt_publish): its MCP definition as JSON bytes."""
    return json.dumps({"name": tool.name, "description": tool.description, "inputSchema": tool.schema,
                       "annotations": {"readOnlyHint": not tool.acting}}).encode()


def _encoded(tool):
    """A built-in's MCP definition as views of its JSON in DEFS (flash on a ROMFS board), the schema's key renamed
    between them (lazy_tool.py Encoded.schema_parts): nothing decoded, nothing copied (a heap short of a 1.5 KB run
    still lists them)."""
    head, tail = tool.schema_parts()
    return head, _MCP_SCHEMA_KEY, tail[:-1], _ACTS if tool.acting else _READS


class Tools:
    """tools/list and tools/call for the MCP server (mcp/server_methods.py)."""

    def __init__(self, app):
        self.app = app
        self.running = 0  # registry calls under way
        self.asks = None  # mcp/server_ask.py Asks, the `mcp` channel, made at the first ask

    def listing(self, tail):
        """(length, pieces) of the tools/list result, `tail` (the era's extra fields) before its last brace: a
        tool's definition at a time, so the whole list is never held (a built-in's is written from DEFS)."""
        picked = []
        length = len(_HEAD) + len(ASK) + len(tail) + 2  # ]}
        for definition in self.app.registry.definitions():  # sorted, made once: the agent's own list
            if isinstance(definition, LazyTool):
                if not offered(definition.name):
                    continue
                # the schema's key one byte shorter, the last brace written by the annotations
                length += len(definition) - 2 + len(_ACTS if definition.acting else _READS)
            else:
                if not offered(definition["name"]):
                    continue
                definition = _plain(self.app.registry.tools[definition["name"]])  # few: kept for the writing
                length += len(definition)
            picked.append(definition)
            length += len(_SEPARATOR)
        return length, _pieces(picked, tail)

    async def call(self, params, client):
        """A tools/call for `client`: (text, is_error) (a failed or refused call is an error result); RpcError
        for a tool the board does not offer or arguments that are not an object."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, "tools/call needs the tool's name in params.name")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "tools/call's arguments must be an object")
        from mimi.mcp.server_commands import role_of  # the settings' module, loaded at the first call

        role = role_of(self.app.config)
        if name == ASK_NAME:
            return await self._ask(arguments, client, role)
        if not offered(name) or name not in self.app.registry.tools:
            raise RpcError(INVALID_PARAMS, "Unknown tool: {} (tools/list names them)".format(name[:_NAME_SHOWN_MAX]))
        if self.running >= CALLS_MAX:
            return ("{} was not run: the board is running {} calls of MCP clients already; try again in a "
                    "moment".format(name, CALLS_MAX)), True
        self.running += 1
        try:
            turn = Turn(MCP, client, {"mcp": client, "role": role}, role)  # unattended: confirm tools refused
            text, is_error = await self.app.registry.execute(name, arguments, turn)
        finally:
            self.running -= 1
        log("mcp: {} called {} as {}{}".format(client, name, role, " (error)" if is_error else ""))
        return text, is_error

    async def _ask(self, arguments, client, role):
        text = arguments.get("text")
        if not isinstance(text, str) or not text.strip():
            return "ask needs text: what to ask or tell the board's agent", True
        if self.asks is None:
            from mimi.mcp.server_ask import Asks

            self.asks = self.app.add_channel(Asks(self.app))  # the `mcp` channel from now on
        log("mcp: {} asks the agent ({} characters)".format(client, len(text)))
        return await self.asks.ask(client, text, role)


def _pieces(picked, tail):
    yield _HEAD + ASK
    for definition in picked:
        yield _SEPARATOR
        if isinstance(definition, LazyTool):
            for piece in _encoded(definition):
                yield piece
        else:
            yield definition
    yield b"]" + tail + b"}"
