# app.mcp_client on both runtimes: loaded only when a server is configured, the console commands, a server's
# tools held by the registry (operator tier, confirm level, a changed list followed), calls bounded and a
# server that is down told in words; the remote servers handed to Claude's connector.
import asyncio
import json

from stub_app import Holder, stub_app
from support import NotImported, imported, raises, remove_tree, run
from test_mcp_client_protocol import Stub, _json

from mimi import mcp, platform
from mimi.mcp.client import MODERN
from mimi.tools import turn
from mimi.tools.registry import Registry

ADD = {"name": "add", "description": "Add two numbers.",
       "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}
SLOW = {"name": "slow", "description": "Sleeps.", "inputSchema": {"type": "object"}}
MULTIPLY = {"name": "multiply", "description": "Multiply.", "inputSchema": {"type": "object"}}


def _app(tag):
    app = stub_app(tag, parts=True)
    app.registry = Registry(app)
    app.models = Holder()
    app.models.mcp_servers = None
    return app


class Said:
    """What the console commands print (platform.console_write), for the test's duration."""

    def __enter__(self):
        self.lines, self.saved = [], platform.console_write
        platform.console_write = self.lines.append
        return self

    def __exit__(self, *exc_info):
        platform.console_write = self.saved
        return False

    @property
    def text(self):
        return "".join(self.lines)


def test_a_board_without_mcp_servers_loads_no_client_code_and_one_with_them_makes_it_at_boot():
    app = _app("mcp-lazy")
    lazy = ("mimi.mcp.client_service", "mimi.mcp.client_local", "mimi.mcp.client", "mimi.mcp.client_answer",
            "mimi.mcp.client_tools", "mimi.mcp.store")
    try:
        with NotImported(*lazy):
            assert mcp.setup(app) is None
            assert not [name for name in lazy if imported(name)]
            with open(app.flash.root + "/mcp.json", "w") as f:
                json.dump({"servers": [{"name": "docs", "url": "https://mcp.example.com/mcp", "token": "t0k",
                                        "remote": True}]}, f)
            clients = mcp.setup(app)  # the next boot: the part made, to start with the network services
            assert clients is app.mcp_client and app.services == [clients] and app.tasks == []
            assert app.models.mcp_servers == [{"type": "url", "url": "https://mcp.example.com/mcp", "name": "docs",
                                               "authorization_token": "t0k"}]
            # Claude's connector alone: the client's transport and tools are not loaded
            assert not imported("mimi.mcp.client_local") and not imported("mimi.mcp.client")
            clients.store.add("home", "http://192.168.1.10:8123/api/mcp")
            clients.apply()
            assert list(clients.servers) == ["home"] and imported("mimi.mcp.client")
    finally:
        remove_tree(app.top)


def _server(tools, calls=None, ttl=0):
    """A 2026-07-28 server: tools (a list it may change), tools/call answered by calls(name, arguments)."""

    def answer(message, headers):
        method = message["method"]
        if method == "server/discover":
            return _json(message, {"supportedVersions": [MODERN]})
        if method == "tools/list":
            return _json(message, {"tools": list(tools), "ttlMs": ttl})
        text = calls(message["params"]["name"], message["params"]["arguments"])
        return _json(message, {"content": [{"type": "text", "text": text}], "isError": False})

    return Stub(answer)


def test_mcp_add_holds_the_tools_as_operator_confirm_and_a_call_goes_to_the_server():
    app = _app("mcp-add")
    tools = [ADD]
    stub = _server(tools, lambda name, args: str(args["a"] + args["b"]))

    async def scenario(url):
        from mimi.mcp import client_commands

        with Said() as said:
            await client_commands.add(app, "local", url, "secret-token-0123456789abcdef")
        assert said.text == ("MCP server local added (2026-07-28): 1 tool: mcp__local__add; each asks before it "
                             "runs (tool_policy <tool> <level> changes that)\n")
        held = app.registry.tools["mcp__local__add"]
        assert (held.tier, held.level, held.acting) == ("operator", "confirm", True)
        assert held in app.registry.definitions()  # written into the request as it is (is_json)
        text = await app.registry.execute("mcp__local__add", {"a": 2, "b": 3}, turn.console())
        tools.append(MULTIPLY)  # ttlMs 0: the list is stale after every call, fetched again in the background
        assert app.mcp_client.servers["local"].due
        await app.mcp_client.servers["local"].fetch()
        with Said() as said:
            await client_commands.list_all(app)
        listed = said.text
        with Said() as said:
            await client_commands.tools(app, "local")
        return text, listed, said.text

    try:
        text, listed, tools_out = stub.run(scenario)
        assert text == ("5", False)
        assert stub.seen[-1][1]["authorization"] == "Bearer secret-token-0123456789abcdef"
        assert "mcp__local__multiply" in app.registry.tools
        assert "secret-token" not in listed and listed.startswith("local  http://127.0.0.1:") and "2 tools" in listed
        assert tools_out == ("  mcp__local__add  (confirm)  Add two numbers.\n"
                             "  mcp__local__multiply  (confirm)  Multiply.\n")
    finally:
        remove_tree(app.top)


def test_a_slow_server_and_a_server_that_is_gone_give_the_model_a_clear_error_never_a_hang():
    app = _app("mcp-down")
    app.config.set("mcp_config", "timeout_s", 1)

    def calls(name, args):
        raise AssertionError("not reached")

    stub = _server([ADD, SLOW], calls)
    holder = {}

    async def added(url):
        from mimi.mcp import client_commands

        with Said():
            await client_commands.add(app, "local", url)
        holder["url"] = url

    try:
        stub.run(added)  # the server stops once the tools are known
        started = platform.ticks_ms()
        text, failed = run(app.registry.execute("mcp__local__add", {"a": 1, "b": 2}, turn.console()))
        assert failed and text.startswith("the MCP server 'local' cannot be reached: cannot reach 127.0.0.1:")
        assert platform.ticks_diff(platform.ticks_ms(), started) < 3000
        server = app.mcp_client.servers["local"]
        assert server.down and server.retry_at is not None  # the background task leaves it alone a while
        assert "mcp__local__add" in app.registry.tools  # its tools stay: the request does not change while down
        silent = _Silent()
        server.conn.url = "http://127.0.0.1:{}/mcp".format(silent.port)
        text, failed = run(silent.during(app.registry.execute("mcp__local__slow", {}, turn.console())))
        assert failed and text == "the MCP server 'local' did not answer within 1 s (mcp_config.timeout_s)"
        with Said() as said:
            run(_removed(app))
        assert said.text == "MCP server local removed; its 2 tools are gone from the agent\n"
        assert not [name for name in app.registry.tools if name.startswith("mcp__")]
        assert "no MCP servers" in _listed(app)
    finally:
        remove_tree(app.top)


async def _removed(app):
    from mimi.mcp import client_commands

    await client_commands.remove(app, "local")


def _listed(app):
    from mimi.mcp import client_commands

    with Said() as said:
        run(client_commands.list_all(app))
    return said.text


class _Silent:
    """A server that takes a request and never answers."""

    def __init__(self):
        from test_mcp_client_protocol import _port

        self.port = _port()

    async def _handle(self, reader, writer):
        while await reader.read(512):
            pass
        writer.close()

    async def during(self, coro):
        server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        try:
            return await coro
        finally:
            server.close()
            await server.wait_closed()


def test_mcp_remote_is_for_claudes_connector_and_mcp_tools_says_the_board_does_not_see_them():
    app = _app("mcp-remote")
    try:
        from mimi.mcp import client_commands

        with Said() as said:
            run(client_commands.add_remote(app, "docs", "https://mcp.example.com/mcp", "tok-0123456789abcdefghijkl"))
            run(client_commands.tools(app, "docs"))
        assert said.lines[0].startswith("MCP server docs added for Claude's MCP connector: Anthropic's API calls it")
        assert said.lines[1].startswith("docs is called by Anthropic's API itself")
        assert app.models.mcp_servers[0]["authorization_token"] == "tok-0123456789abcdefghijkl"
        assert "is not public" in str(raises(ValueError, run, client_commands.add_remote(
            app, "lan", "https://192.168.1.10/mcp")))
        run(client_commands.remove(app, "docs"))
        assert app.models.mcp_servers is None
    finally:
        remove_tree(app.top)


def test_every_page_of_a_long_list_is_followed_and_a_gone_tool_leaves_the_registry():
    app = _app("mcp-pages")
    pages = {None: ([ADD], "p2"), "p2": ([SLOW], "p3"), "p3": ([MULTIPLY], None)}

    def answer(message, headers):
        if message["method"] == "server/discover":
            return _json(message, {"supportedVersions": [MODERN]})
        tools, cursor = pages[message["params"].get("cursor")]
        result = {"tools": tools, "ttlMs": 60000}
        if cursor:
            result["nextCursor"] = cursor
        return _json(message, result)

    async def scenario(url):
        from mimi.mcp import client_commands

        with Said():
            await client_commands.add(app, "local", url)
        held = sorted(name for name in app.registry.tools if name.startswith("mcp__"))
        pages["p2"] = ([], "p3")  # slow is gone from the server
        await app.mcp_client.servers["local"].fetch()
        return held, sorted(name for name in app.registry.tools if name.startswith("mcp__"))

    try:
        stub = Stub(answer)
        held, after = stub.run(scenario)
        assert held == ["mcp__local__add", "mcp__local__multiply", "mcp__local__slow"]
        assert [m["params"].get("cursor") for _, _, m in stub.seen if m["method"] == "tools/list"][:3] == [
            None, "p2", "p3"]
        assert after == ["mcp__local__add", "mcp__local__multiply"]
        assert app.mcp_client.servers["local"].fresh_ms == 60000  # ttlMs: not stale after a call for a minute
    finally:
        remove_tree(app.top)


def test_a_server_given_again_on_another_host_loses_its_token_and_mcp_remote_says_so():
    app = _app("mcp-token-host")
    token = "tok-0123456789abcdefghijkl"
    try:
        from mimi.mcp import client_commands

        with Said() as said:
            run(client_commands.add_remote(app, "docs", "https://mcp.example.com/mcp", token))
            run(client_commands.add_remote(app, "docs", "https://MCP.example.com:443/v2"))  # the same host
            assert app.models.mcp_servers[0]["authorization_token"] == token and "dropped" not in said.lines[-1]
            run(client_commands.add_remote(app, "docs", "https://mcp.attacker.example/mcp"))
        assert said.lines[-1].rstrip("\n").endswith("(a server on your network: mcp_add); token dropped: the host "
                                                    "changed"), said.lines[-1]
        assert "authorization_token" not in app.models.mcp_servers[0]
        assert app.mcp_client.store.get("docs").get("token") is None
        refused = raises(ValueError, run, client_commands.add_remote(app, "e3", "https://[::1/mcp", token))
        assert "never closes it with ]" in str(refused) and app.mcp_client.store.get("e3") is None
    finally:
        remove_tree(app.top)
