# app.mcp_client: the MCP servers the board's agent uses (made at boot when mcp.json lists one, else at the first
# mcp_* command). Each local server's tools join the registry as mcp__<server>__<tool> once fetched; a task
# started with the network services fetches the lists in the background (boot and the first turn never wait)
# and keeps them fresh; the remote servers go into every agent request as Claude's MCP connector.
import asyncio

from mimi import platform
from mimi.mcp import NS
from mimi.mcp.client import INVALID_PARAMS, Connection, Down, McpError
from mimi.mcp.client_tools import RemoteTool, api_name, definition, result_text
from mimi.mcp.store import Store
from mimi.net.backoff import Backoff
from mimi.platform import const
from mimi.tools.registry import ToolError

PAGES_MAX = const(8)  # tools/list pages followed (nextCursor)
TOOLS_MAX = const(64)  # tools of one server offered to Claude
REFRESH_S = const(600)  # a list is fetched again at least this often: the board holds no stream per server
CHECK_S = const(30)  # the task looks for due lists this often, and at once when poked
RETRY_FIRST_S = const(10)  # an unreachable server is tried again after this, doubling up to RETRY_MAX_S
RETRY_MAX_S = const(600)


class _Server:
    """A local server's live state: its connection, the tools the registry holds for it, its list's age."""

    def __init__(self, entry):
        self.name = entry["name"]
        self.conn = Connection(entry["url"], entry.get("token"))
        self.tools = {}  # registry name -> the server's own name of the tool
        self.fetched_ms = None  # ticks of the last list fetched
        self.fresh_ms = REFRESH_S * 1000  # how long that list stays fresh (a 2026-07-28 answer's ttlMs)
        self.due = True  # fetch at the next look
        self.down = None  # why it cannot be reached, while it cannot
        self.retry = Backoff(RETRY_FIRST_S * 1000, RETRY_MAX_S * 1000)
        self.retry_at = None  # ticks before which a down server is left alone
        self.fetching = asyncio.Lock()  # the task's fetch and a command's never both run

    def age_ms(self):
        return platform.ticks_diff(platform.ticks_ms(), self.fetched_ms) if self.fetched_ms is not None else None


class Clients:
    """The client side of MCP: the store (mcp.json), a Connection per local server, the connector's list."""

    offline = False  # it needs the network: started with the other services (parts.start_late)

    def __init__(self, app):
        self.app = app
        self.store = Store(app.flash.root)
        self.servers = {}  # name -> _Server, the local ones
        self.wake = asyncio.Event()
        self.apply()

    def timeout_s(self):
        return self.app.config.get(NS, "timeout_s")

    def apply(self):
        """Follow the store: a connection per local server (the tools of a removed or changed one leave the
        registry) and Claude's connector for the remote ones (app.claude.mcp_servers, None when none)."""
        wanted = {}
        for entry in self.store.local():
            wanted[entry["name"]] = entry
        for name in list(self.servers):
            server, entry = self.servers[name], wanted.get(name)
            if entry is None or entry["url"] != server.conn.url or entry.get("token") != server.conn.token:
                self._hold(server, [])
                del self.servers[name]
        for name in wanted:
            if name not in self.servers:
                self.servers[name] = _Server(wanted[name])
        remote = []
        for entry in self.store.remote():
            server = {"type": "url", "url": entry["url"], "name": entry["name"]}
            if entry.get("token"):
                server["authorization_token"] = entry["token"]
            remote.append(server)
        self.app.claude.mcp_servers = remote or None
        self.wake.set()

    async def run(self):
        """Fetch each local server's list when due: at the start, when stale, after a change was announced."""
        while True:
            self.wake.clear()
            for server in list(self.servers.values()):
                if self._due(server):
                    await self.fetch(server)
            try:
                await asyncio.wait_for(self.wake.wait(), CHECK_S)
            except asyncio.TimeoutError:
                pass

    def _due(self, server):
        if server.retry_at is not None and platform.ticks_diff(server.retry_at, platform.ticks_ms()) > 0:
            return False  # down: left alone until its retry time
        age = server.age_ms()
        return server.due or server.conn.tools_changed or age is None or age >= max(server.fresh_ms,
                                                                                      REFRESH_S * 1000)

    async def fetch(self, server):
        """Fetch a server's list now and hold its tools: None, or why it failed (said once on the console)."""
        busy = server.fetching.locked()
        async with server.fetching:
            if busy:  # fetched just now by the task (or a command): its outcome stands
                return server.down
            try:
                await self.refresh(server)
            except (Down, McpError) as exc:
                return self._went_down(server, _why(exc))
        return None

    async def refresh(self, server):
        """Every page of the server's tools/list; the registry then holds exactly those tools. Down, McpError."""
        conn, found, cursor, ttl = server.conn, [], None, None
        server.due = conn.tools_changed = False
        for _ in range(PAGES_MAX):
            result = await conn.request("tools/list", {"cursor": cursor} if cursor else {}, self.timeout_s())
            tools = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(tools, list):
                raise Down("its tools/list answer holds no list of tools")
            found.extend([tool for tool in tools if isinstance(tool, dict) and isinstance(tool.get("name"), str)])
            ttl, cursor = result.get("ttlMs"), result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or len(found) >= TOOLS_MAX:
                break
        self._hold(server, found[:TOOLS_MAX])
        server.fetched_ms = platform.ticks_ms()
        server.fresh_ms = ttl if conn.modern and isinstance(ttl, int) and ttl >= 0 else REFRESH_S * 1000
        self._came_back(server)

    def _hold(self, server, tools):
        """The registry holds exactly these tools of the server: a changed definition replaced, a gone one
        taken out, the others kept as they are (the request's tools stay byte for byte: prompt caching)."""
        registry, wanted = self.app.registry, {}
        for tool in tools:
            name = api_name(server.name, tool["name"], wanted)
            wanted[name] = (tool["name"], definition(name, tool, server.name))
        for name in list(server.tools):
            held = registry.tools.get(name)
            if name not in wanted or not isinstance(held, RemoteTool) or held.encoded != wanted[name][1]:
                registry.remove(name)
                del server.tools[name]
        for name in wanted:
            if name not in server.tools:
                remote, encoded = wanted[name]
                if registry.add(RemoteTool(self, server.name, remote, name, encoded), "MCP server " + server.name):
                    server.tools[name] = remote

    async def call(self, name, tool, data):
        """Run a tool of a local server for the registry: its result as text; ToolError with a clear reason
        (down, too slow, refused), never a hang: the whole call, the era's negotiation included, is bounded."""
        server = self.servers.get(name)
        if server is None:
            raise ToolError("the MCP server '{}' is no longer used (mcp_list)".format(name))
        seconds = self.timeout_s()
        try:
            asked = server.conn.request("tools/call", {"name": tool, "arguments": data}, seconds + 1)
            result = await asyncio.wait_for(asked, seconds)  # its own limit a little later: this one speaks
        except asyncio.TimeoutError:
            asyncio.create_task(server.conn.cancel(seconds))
            raise ToolError("the MCP server '{}' did not answer within {} s (mcp_config.timeout_s)".format(
                name, seconds))
        except Down as exc:
            self._went_down(server, _why(exc))
            raise ToolError("the MCP server '{}' cannot be reached: {}".format(name, _why(exc)))
        except McpError as exc:
            server.due = server.due or exc.code == INVALID_PARAMS  # an unknown tool: the list may have changed
            raise ToolError("the MCP server '{}' refused the call: {}".format(name, _why(exc)))
        finally:
            self._after_call(server)
        self._came_back(server)
        try:
            return result_text(result)
        except ToolError as exc:
            server.due = server.due or str(exc).lower().startswith("unknown tool")
            raise

    def _after_call(self, server):
        """A call may change a server's tools: its list is fetched again (in the background) once announced
        changed, or once stale by its own freshness (ttlMs 0: after every call)."""
        age = server.age_ms()
        if server.conn.tools_changed or (age is not None and age >= server.fresh_ms):
            server.due = True
            self.wake.set()

    def _went_down(self, server, why):
        if server.down is None:
            print("mcp: {}: {}; its tools answer with an error until it is back".format(server.name, why))
        server.down = why
        server.retry_at = platform.ticks_add(platform.ticks_ms(), server.retry.next())
        return why

    def _came_back(self, server):
        if server.down is not None:
            print("mcp: {} answers again".format(server.name))
        server.down, server.retry_at = None, None
        server.retry.reset()


def _why(exc):
    if isinstance(exc, McpError):
        return exc.message if exc.code in (0, None) else "{} (error {})".format(exc.message, exc.code)
    return str(exc) or exc.__class__.__name__
