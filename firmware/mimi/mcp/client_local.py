# A server the board's own MCP client calls (mcp_add): its connection, its tools held by the registry as
# mcp__<server>__<tool>, its list fetched and kept fresh, its calls bounded; loaded only once such a server is
# configured (a board that only uses Claude's connector never loads the client's transport).
import asyncio

from mimi import platform
from mimi.mcp.client import INVALID_PARAMS, Connection, Down, McpError
from mimi.mcp.client_tools import RemoteTool, api_name, definition, result_text
from mimi.net.backoff import Backoff
from mimi.platform import const
from mimi.safety import masking
from mimi.tools.registry import ToolError

_PAGES_MAX = const(8)  # tools/list pages followed (nextCursor)
_TOOLS_MAX = const(64)  # tools of one server offered to Claude
_REFRESH_S = const(600)  # a list is fetched again at least this often: the board holds no stream per server
RETRY_FIRST_S = const(10)  # an unreachable server is tried again after this, doubling up to RETRY_MAX_S
RETRY_MAX_S = const(600)


class LocalServer:
    """One server of the board's client: its connection, the tools the registry holds for it (`tools`:
    registry name -> the server's own name), its list's age, and why it is down while it is."""

    def __init__(self, clients, entry):
        self.clients, self.name = clients, entry["name"]
        self.conn = Connection(entry["url"], entry.get("token"))
        self.tools = {}
        self.fetched_ms = None  # ticks of the last list fetched
        self.fresh_ms = _REFRESH_S * 1000  # how long that list stays fresh (a 2026-07-28 answer's ttlMs)
        self.due = True  # fetch at the next look
        self.down = None  # why it cannot be reached, while it cannot
        self.retry = Backoff(RETRY_FIRST_S * 1000, RETRY_MAX_S * 1000)
        self.retry_at = None  # ticks before which a down server is left alone
        self.fetching = asyncio.Lock()  # the task's fetch and a command's never both run

    def _age_ms(self):
        return platform.ticks_diff(platform.ticks_ms(), self.fetched_ms) if self.fetched_ms is not None else None

    def needs_fetch(self):
        """Due for the client's task: never fetched, announced changed, marked, or past its freshness (at most
        every _REFRESH_S when nothing asks); a down server only once its retry time has come."""
        if self.retry_at is not None and platform.ticks_diff(self.retry_at, platform.ticks_ms()) > 0:
            return False
        age = self._age_ms()
        return self.due or self.conn.tools_changed or age is None or age >= max(self.fresh_ms, _REFRESH_S * 1000)

    async def fetch(self):
        """Fetch the list now and hold its tools: None, or why it failed (said once on the console)."""
        busy = self.fetching.locked()
        async with self.fetching:
            if busy:  # fetched just now by the task (or a command): its outcome stands
                return self.down
            try:
                await self._refresh()
            except (Down, McpError) as exc:
                return self._went_down(_why(exc, self.clients.app))
        return None

    async def _refresh(self):
        conn, found, cursor, ttl = self.conn, [], None, None
        self.due = conn.tools_changed = False
        for _ in range(_PAGES_MAX):
            result = await conn.request("tools/list", {"cursor": cursor} if cursor else {}, self.clients.timeout_s())
            tools = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(tools, list):
                raise Down("its tools/list answer holds no list of tools")
            found.extend([tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)])
            ttl, cursor = result.get("ttlMs"), result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or len(found) >= _TOOLS_MAX:
                break
        if self.clients.servers.get(self.name) is not self:
            return  # removed (or changed) while its list was on the way: its tools are not wanted
        self.hold(found[:_TOOLS_MAX])
        self.fetched_ms = platform.ticks_ms()
        self.fresh_ms = ttl if conn.modern and isinstance(ttl, int) and ttl >= 0 else _REFRESH_S * 1000
        self._came_back()

    def hold(self, tools):
        """The registry holds exactly these tools of the server: a changed definition replaced, a gone one
        taken out, the others kept as they are (the request's tools stay byte for byte: prompt caching)."""
        registry, wanted = self.clients.app.registry, {}
        for tool in tools:
            name = api_name(self.name, tool["name"], wanted)
            wanted[name] = (tool["name"], definition(name, tool, self.name))
        for name in list(self.tools):
            held = registry.tools.get(name)
            if name not in wanted or not isinstance(held, RemoteTool) or held.encoded != wanted[name][1]:
                registry.remove(name)
                del self.tools[name]
        for name in wanted:
            if name not in self.tools:
                remote, encoded = wanted[name]
                if registry.add(RemoteTool(self.clients, self.name, remote, name, encoded), "MCP server " + self.name):
                    self.tools[name] = remote

    async def call(self, tool, data):
        """Run one of its tools for the registry: the result as text; ToolError with a clear reason (down, too
        slow, refused), never a hang: the whole call, the era's negotiation included, is bounded."""
        seconds = self.clients.timeout_s()
        try:
            asked = self.conn.request("tools/call", {"name": tool, "arguments": data}, seconds + 1)
            result = await asyncio.wait_for(asked, seconds)  # its own limit a little later: this one speaks
        except asyncio.TimeoutError:
            asyncio.create_task(self.conn.cancel(seconds))
            raise ToolError("the MCP server '{}' did not answer within {} s (mcp_config.timeout_s)".format(
                self.name, seconds))
        except Down as exc:
            why = self._went_down(_why(exc, self.clients.app))
            raise ToolError("the MCP server '{}' cannot be reached: {}".format(self.name, why))
        except McpError as exc:
            self.due = self.due or exc.code == INVALID_PARAMS  # an unknown tool: the list may have changed
            raise ToolError("the MCP server '{}' refused the call: {}".format(self.name, _why(exc, self.clients.app)))
        finally:
            self._after_call()
        self._came_back()
        try:
            return result_text(result)
        except ToolError as exc:
            self.due = self.due or str(exc).lower().startswith("unknown tool")
            raise

    def _after_call(self):
        """A call may change the server's tools: the list is fetched again (in the background) once announced
        changed, or once stale by its own freshness (ttlMs 0: after every call)."""
        age = self._age_ms()
        if self.conn.tools_changed or (age is not None and age >= self.fresh_ms):
            self.due = True
            self.clients.wake.set()

    def _went_down(self, why):
        if self.down is None:
            platform.log("mcp: {}: {}; {}".format(self.name, why, "its tools answer with an error until it is back"
                                           if self.tools else "its tools come when it answers"))
        self.down = why
        self.retry_at = platform.ticks_add(platform.ticks_ms(), self.retry.next())
        return why

    def _came_back(self):
        if self.down is not None:
            platform.log("mcp: {} answers again".format(self.name))
        self.down, self.retry_at = None, None
        self.retry.reset()


def _why(exc, app):
    """What went wrong, in words for the model, the console and mcp_list: the server's own words with every
    secret masked (a server may quote the token it was sent)."""
    if isinstance(exc, McpError):
        said = exc.message if exc.code in (0, None) else "{} (error {})".format(exc.message, exc.code)
    else:
        said = str(exc) or exc.__class__.__name__
    return masking.outside(said, masking.of_app(app))
