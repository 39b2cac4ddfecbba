# The MCP servers the board's agent uses, app.part("mcp_client") (made at boot when mcp.json lists one, else at
# the first mcp_* command). Each local server's tools join the registry as mcp__<server>__<tool> once fetched (its code,
# client_local.py, loaded only then); a task started with the network services fetches the lists in the
# background (boot and the first turn never wait) and keeps them fresh; the remote servers go into every agent
# request as Claude's MCP connector.
import asyncio

from mimi.mcp import NS
from mimi.mcp.store import Store
from mimi.platform import const
from mimi.tools.registry import ToolError
from mimi.health import memory_errors

CHECK_S = const(30)  # the task looks for due lists this often, and at once when poked


class Clients:
    """The client side of MCP: the store (mcp.json), a LocalServer per server the board calls, and the
    connector's list (app.models.mcp_servers) of those Anthropic's API calls."""

    offline = False  # it needs the network: started with the other services (parts.start_late)

    def __init__(self, app):
        self.app = app
        self.store = Store(app.flash.root)
        self.servers = {}  # name -> LocalServer
        self.wake = asyncio.Event()
        self.apply()

    def timeout_s(self):
        return self.app.config.get(NS, "timeout_s")

    def apply(self):
        """Follow the store: a LocalServer per local server (the tools of a removed or changed one leave the
        registry) and Claude's connector for the remote ones (app.models.mcp_servers, None when none)."""
        wanted = {}
        for entry in self.store.local():
            wanted[entry["name"]] = entry
        for name in list(self.servers):
            server, entry = self.servers[name], wanted.get(name)
            if entry is None or entry["url"] != server.conn.url or entry.get("token") != server.conn.token:
                server.hold([])
                del self.servers[name]
        for name in wanted:
            if name not in self.servers:
                from mimi.mcp.client_local import LocalServer

                self.servers[name] = LocalServer(self, wanted[name])
        remote = []
        for entry in self.store.remote():
            server = {"type": "url", "url": entry["url"], "name": entry["name"]}
            if entry.get("token"):
                server["authorization_token"] = entry["token"]
            remote.append(server)
        self.app.models.mcp_servers = remote or None
        self.wake.set()

    async def run(self):
        """Fetch each local server's list when due: at the start, when stale, after a change was announced."""
        while True:
            try:
                self.wake.clear()
                for server in list(self.servers.values()):
                    if server.needs_fetch():
                        await server.fetch()
                try:
                    await asyncio.wait_for(self.wake.wait(), CHECK_S)
                except asyncio.TimeoutError:
                    pass
            except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
                memory_errors.short("MCP client", exc)
                await asyncio.sleep(memory_errors.AGAIN_S)

    async def call(self, name, tool, data):
        """Run a tool of a local server for the registry (client_tools.RemoteTool): its result as text."""
        server = self.servers.get(name)
        if server is None:
            raise ToolError("the MCP server '{}' is no longer used (mcp_list)".format(name))
        return await server.call(tool, data)
