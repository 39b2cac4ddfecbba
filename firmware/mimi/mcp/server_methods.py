# The MCP server's methods: what each JSON-RPC request of an MCP client gets (the handshake's and the
# stateless revision's opening, ping, tools, resources), in the shape its protocol revision asks for.
import json

from mimi import VERSION, platform
from mimi.agent.prompt_file import file_slices
from mimi.jsontext import escaped
from mimi.mcp.server_rpc import INVALID_PARAMS, METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, RpcError
from mimi.mcp.server_tools import Tools
from mimi.platform import const
from mimi.storage import files

SERVER_NAME = "mimiclaw"
MODERN_VERSION = "2026-07-28"  # the stateless revision: the per-request envelope, server/discover
RESOURCE_MAX = const(16 * 1024)  # bytes of one resource read; a longer file is cut with CUT_NOTE
CUT_NOTE = "\n\n[cut here: the file is longer than {} bytes]"
_METHOD_SHOWN_MAX = const(64)
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
_INSTRUCTIONS = ("MimiClaw, an ESP32-S3 board: its own tools (GPIO, sensors, files, memory, schedules) act with the "
                 "role its owner gave MCP clients; `ask` puts a question to the board's own agent.")
_MARKDOWN = "text/markdown"
# The resources, read-only: (uri, name, the Flash attribute with its path, description); today's daily note
# is added with its date.
_RESOURCES = (
    ("mimi://config/SOUL.md", "SOUL.md", "soul_path", "the agent's personality and values"),
    ("mimi://config/USER.md", "USER.md", "user_path", "what the agent knows of its owner"),
    ("mimi://memory/MEMORY.md", "MEMORY.md", "memory_path", "the agent's long-term memory"),
)
_DAILY_URI = "mimi://memory/daily/{}.md"
# What an MCP client acting with a role other than the owner's may list and read: the personality alone; USER.md,
# MEMORY.md and the daily notes are the owner's (tools/sandbox.py OWNER_ONLY, as for the file tools).
_EVERYONES = ("mimi://config/SOUL.md",)
# 2026-07-28: every result says its type; lists and reads say how long they may be cached.
_COMPLETE = b', "resultType": "complete"'
_CACHED = b', "ttlMs": 0, "cacheScope": "private"'


def _capabilities():
    return {"tools": {}, "resources": {}}


def initialized(version):
    """The initialize result for the negotiated handshake revision."""
    return {"protocolVersion": version, "capabilities": _capabilities(),
            "serverInfo": {"name": SERVER_NAME, "version": VERSION}, "instructions": _INSTRUCTIONS}


class Methods:
    """The requests an MCP client may send once the transport (mcp/server.py) has checked who it is."""

    def __init__(self, app):
        self.app = app
        self.tools = Tools(app)

    async def call(self, method, params, client, modern):
        """The result of `method` for `client`: a dict, or (length or None, pieces) of its JSON bytes for a long
        one (the tool list, a call's text, a file), never held whole; RpcError for what the client must be told
        is wrong."""
        tail = _COMPLETE if modern else b""  # the revision's extra fields, before a result's last brace
        if method == "tools/list":
            _no_cursor(params)
            return self.tools.listing(tail + _CACHED if modern else b"")
        if method == "tools/call":
            text, is_error = await self.tools.call(params, client)
            return None, _text_result(text, is_error, tail)
        if method == "resources/read":
            return None, self._read(params.get("uri"), tail + _CACHED if modern else b"")
        if method == "ping":
            answer = {}
        elif method == "resources/list":
            _no_cursor(params)
            answer = {"resources": self._resources()}
        elif method == "resources/templates/list":
            answer = {"resourceTemplates": []}
        elif method == "server/discover" and modern:
            answer = {"supportedVersions": [MODERN_VERSION], "capabilities": _capabilities(),
                      "instructions": _INSTRUCTIONS,
                      "_meta": {_SERVER_INFO_KEY: {"name": SERVER_NAME, "version": VERSION}}}
        else:
            raise RpcError(METHOD_NOT_FOUND, "Method not found: {}".format(method[:_METHOD_SHOWN_MAX]))
        if modern:
            answer["resultType"] = "complete"
            if method != "ping":  # the lists and discover may be cached: for no time, by this client only
                answer["ttlMs"] = 0
                answer["cacheScope"] = "private"
        return answer

    def _owners(self):
        """True while MCP clients act as the owner (mcp_role): only then are the owner's files theirs to read."""
        from mimi.mcp.server_commands import role_of  # the settings' module, loaded at the first call
        from mimi.safety.roles import OWNER

        return role_of(self.app.config) == OWNER

    def _resources(self):
        flash, listed, owners = self.app.flash, [], self._owners()
        for uri, name, _, description in _RESOURCES:
            if owners or uri in _EVERYONES:
                listed.append({"uri": uri, "name": name, "description": description, "mimeType": _MARKDOWN})
        if not owners:
            return listed
        date = platform.utc_date()
        listed.append({"uri": _DAILY_URI.format(date), "name": "{}.md".format(date), "mimeType": _MARKDOWN,
                       "description": "today's daily note (UTC date)" if files.exists(flash.daily_path(date))
                       else "today's daily note (UTC date; none written yet)"})
        return listed

    def _read(self, uri, tail):
        """resources/read's pieces: the file read, escaped and sent a slice at a time (MEMORY.md may be 16 KB)."""
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, "resources/read needs the resource's uri in params.uri")
        flash, path = self.app.flash, None
        for known, _, attribute, _ in _RESOURCES:
            if uri == known:
                path = getattr(flash, attribute)
        date = platform.utc_date()
        if uri == _DAILY_URI.format(date):
            path = flash.daily_path(date)
        if path is None:
            raise RpcError(RESOURCE_NOT_FOUND, "Resource not found: {} (resources/list names them)".format(
                uri[:_METHOD_SHOWN_MAX]), {"uri": uri[:_METHOD_SHOWN_MAX]})
        if uri not in _EVERYONES and not self._owners():  # refused as not there: nothing of it is said
            raise RpcError(RESOURCE_NOT_FOUND, "Resource not found: {} is the owner's, and MCP clients do not act "
                           "as the owner (mcp_role)".format(uri), {"uri": uri})
        return _file_result(uri, path, tail)


def _text_result(text, is_error, tail):
    """tools/call's result, its text escaped a slice at a time (a tool's result may be 8 KB, an answer 16 KB)."""
    yield b'{"content": [{"type": "text", "text": "'
    for piece in escaped(text):
        yield piece
    yield b'"}], "isError": ' + (b"true" if is_error else b"false") + tail + b"}"


def _file_result(uri, path, tail):
    yield b'{"contents": [{"uri": ' + json.dumps(uri).encode() + b', "mimeType": "text/markdown", "text": "'
    for text in file_slices(path, RESOURCE_MAX):  # a note not written yet reads as empty
        for piece in escaped(text):
            yield piece
    if files.size(path) > RESOURCE_MAX:
        for piece in escaped(CUT_NOTE.format(RESOURCE_MAX)):
            yield piece
    yield b'"}]' + tail + b"}"


def _no_cursor(params):
    """The board's lists come in one page: a cursor (which it never gives) is a mistake."""
    if params.get("cursor") is not None:
        raise RpcError(INVALID_PARAMS, "unknown cursor: this server's lists come in one page")
