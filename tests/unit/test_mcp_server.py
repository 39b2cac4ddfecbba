# The board's MCP server without a network: its JSON-RPC checks, sessions, the stateless envelope, who may use
# it, the tool list written from DEFS, calls run as mcp_role, ask's turns and the resources (both runtimes).
import asyncio
import json

from microdot.microdot import NoCaseDict

from mimi import mcp
from mimi.bus.message import Message
from mimi.gateway import auth
from mimi.mcp import server_rpc
from mimi.mcp.server import SESSIONS_MAX, Server, client_name
from mimi.mcp.server_ask import ASKS_MAX, Asks
from mimi.mcp.server_methods import RESOURCE_MAX
from mimi.mcp.server_rpc import RpcError
from mimi.mcp.server_tools import ASK, CALLS_MAX, Tools
from mimi.platform import NVS, const
from mimi.safety import policy
from mimi.tools import builtin_defs  # noqa: F401  its 12 KB constants made first: the unit heap is small
from mimi.tools.lazy_tool import LazyTool
from mimi.tools.loading import load_builtins
from mimi.tools.registry import Registry
from stub_app import stub_app
from support import raises, remove_tree, run, write

_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
         "io.modelcontextprotocol/clientInfo": {"name": "Claude Desktop", "version": "1"}}
_BIG = const(20000)


class _Request:
    """What the server reads of a microdot request."""

    def __init__(self, body=b"", headers=None, method="POST"):
        self.method = method
        self.headers = NoCaseDict(headers or {})
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.content_length = len(self.body)
        self.args = {}
        self.stream = None
        self.client_addr = ("192.168.1.5", 50000)


class _Stream:
    """A request's unread body of `left` bytes."""

    def __init__(self, left):
        self.left = left

    async def read(self, n):
        n = min(n, self.left)
        self.left -= n
        return b"x" * n


class _TurnTool:
    """An owner's tool that keeps the turn it ran for."""

    name = "turn_probe"
    description = "Tell who is asking."
    schema = {"type": "object", "properties": {}}
    tier = "observer"
    level = "autonomous"
    acting = False
    wants_turn = True

    def __init__(self):
        self.turns = []

    def run(self, data, turn):
        self.turns.append(turn)
        return "ran"


class _RemoteTool(_TurnTool):
    name = "mcp__ha__light_on"  # another MCP server's tool (the board's MCP client)


def _app(tag):
    from mimi.storage.sessions import Sessions

    app = stub_app(tag)
    app.sessions = Sessions(app.flash.sessions_dir)
    app.registry = Registry(app)
    load_builtins(app.registry)
    app.policy = policy.setup(app)
    mcp.setup(app)
    return app


def _headers(app, extra=None):
    headers = {"Authorization": "Bearer " + auth.current(app.config), "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    headers.update(extra or {})
    return headers


def _body_of(response):
    body = response.body
    return body if isinstance(body, bytes) else b"".join(bytes(piece) for piece in body)


def _serve(server, body=b"", headers=None, method="POST"):
    """(status, headers, the JSON body or None) of one request, with the token unless headers say otherwise."""
    response = run(server.serve(_Request(body, headers if headers is not None else _headers(server.app), method)))
    data = _body_of(response)
    return response.status_code, response.headers, json.loads(data) if data else None


def _initialize(server, version="2025-11-25", name="Claude Code"):
    status, headers, body = _serve(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}})
    assert status == 200, body
    return headers["Mcp-Session-Id"], body["result"]


def _in_session(server, session, message, version="2025-11-25"):
    return _serve(server, message, _headers(server.app, {"Mcp-Session-Id": session, "MCP-Protocol-Version": version}))


def _stateless(server, method, params=None, headers=None):
    params = dict(params or {})
    params["_meta"] = _META
    sent = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    sent.update(headers or {})
    return _serve(server, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
                  _headers(server.app, sent))


def test_messages_that_are_not_json_rpc_requests_are_refused_saying_what_is_wrong():
    cases = (
        (b"\xff\xfe{}", -32700, "not JSON in UTF-8"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\xed\xa0\x80"}', -32700, "not JSON in UTF-8"),  # a surrogate half
        (b'{"jsonrpc": "2.0", "id": ', -32700, "not JSON"),
        (b"", -32700, "not JSON"),
        (b"[" * 3000 + b"]" * 3000, None, ""),  # nested too deep on one runtime, a batch on the other
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, "no batches"),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, 'jsonrpc must be "2.0"'),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, "id must be a string or an integer"),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, "id must be a string or an integer"),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, "must not be null"),
        (b'{"jsonrpc": "2.0", "method": "tools/list"}', -32600, "tools/list is a request: it needs an id"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600, "needs a method"),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}', -32602, "params must be an object"),
    )
    for body, code, words in cases:
        try:
            server_rpc.checked(server_rpc.parsed(body))
        except RpcError as exc:
            assert exc.status == 400 and (code is None or exc.code == code) and words in exc.message, (body, exc)
            continue
        raise AssertionError("{!r} was taken".format(body[:40]))
    assert server_rpc.checked(server_rpc.parsed(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')) == \
        (None, "notifications/initialized", {})
    assert server_rpc.checked({"jsonrpc": "2.0", "id": 3, "result": {}}) == (None, None, {})  # a client's answer
    assert server_rpc.checked({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": None}) == ("a", "ping", {})


def test_the_handshake_opens_a_session_whose_id_every_later_message_must_carry():
    app = _app("mcp-session")
    try:
        server = Server(app)
        session, opened = _initialize(server, "2025-06-18")
        assert opened["protocolVersion"] == "2025-06-18" and opened["serverInfo"]["name"] == "mimiclaw"
        assert opened["capabilities"] == {"tools": {}, "resources": {}} and len(session) == 32
        assert _initialize(server, "2024-11-05")[1]["protocolVersion"] == "2025-11-25"  # not spoken: the latest
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert _in_session(server, session, ping)[2] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        status, _, body = _serve(server, ping)
        assert status == 400 and body["error"]["message"].startswith("Bad Request: Missing session ID")
        assert _in_session(server, "f" * 32, ping)[0] == 404
        assert _in_session(server, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202
        status, _, body = _in_session(server, session, {"jsonrpc": "2.0", "id": 3, "method": "prompts/list"})
        assert status == 200 and body["error"] == {"code": -32601, "message": "Method not found: prompts/list"}
        status, headers, _ = _serve(server, b"", _headers(app, {"Mcp-Session-Id": session}), "GET")
        assert status == 405 and headers["Allow"] == "POST, DELETE"
        assert _serve(server, b"", _headers(app, {"Mcp-Session-Id": session}), "DELETE")[0] == 200
        assert _in_session(server, session, ping)[0] == 404
        kept = _initialize(server)[0]
        for _ in range(SESSIONS_MAX):  # one more than fit: the one unused for the longest goes
            _in_session(server, kept, ping)
            _initialize(server)
        assert len(server.sessions) == SESSIONS_MAX and _in_session(server, kept, ping)[0] == 200
    finally:
        remove_tree(app.top)


def test_the_stateless_revision_checks_its_envelope_and_the_headers_that_mirror_it():
    app = _app("mcp-stateless")
    try:
        server = Server(app)
        status, _, body = _stateless(server, "server/discover")
        found = body["result"]
        assert status == 200 and found["supportedVersions"] == ["2026-07-28"] and found["resultType"] == "complete"
        assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mimiclaw"
        assert found["ttlMs"] == 0 and found["cacheScope"] == "private"
        assert _stateless(server, "ping")[2]["result"] == {"resultType": "complete"}
        status, _, body = _stateless(server, "ping", headers={"MCP-Protocol-Version": "2030-01-01"})
        assert status == 400 and body["error"]["code"] == -32020  # the header disagrees with the envelope
        status, _, body = _stateless(server, "ping", headers={"Mcp-Method": "tools/list"})
        assert status == 400 and body["error"]["code"] == -32020
        name = {"name": "get_current_time", "arguments": {}}
        assert _stateless(server, "tools/call", name, {"Mcp-Name": "recall"})[2]["error"]["code"] == -32020
        status, _, body = _stateless(server, "tools/call", name, {"Mcp-Name": "=?base64?Z2V0X2N1cnJlbnRfdGltZQ==?="})
        assert status == 200 and body["result"]["isError"] is False  # a name sent wrapped in base64
        request = {"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"_meta": dict(
            _META, **{"io.modelcontextprotocol/protocolVersion": "2027-01-01"})}}
        status, _, body = _serve(server, request, _headers(app, {"MCP-Protocol-Version": "2027-01-01",
                                                                 "Mcp-Method": "ping"}))
        assert status == 400 and body["error"]["code"] == -32022 and body["id"] == 8
        assert body["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2027-01-01"}
        status, _, body = _serve(server, {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {}},
                                 _headers(app, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"}))
        assert status == 400 and body["error"]["code"] == -32602 and "envelope" in body["error"]["message"]
        assert _stateless(server, "initialize")[0] == 404  # no handshake in this revision
        assert _serve(server, {"jsonrpc": "2.0", "method": "notifications/cancelled"},
                      _headers(app, {"MCP-Protocol-Version": "2026-07-28"}))[0] == 202
        assert server.sessions == {}  # stateless: nothing kept
    finally:
        remove_tree(app.top)


def test_only_the_token_opens_the_endpoint_and_pages_of_other_sites_are_refused():
    app = _app("mcp-auth")
    try:
        server = Server(app)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        status, headers, body = _serve(server, ping, {"Content-Type": "application/json"})
        assert status == 401 and headers["WWW-Authenticate"] == 'Bearer realm="mimi"'
        assert "Authorization: Bearer" in body["error"]["message"]
        assert _serve(server, ping, _headers(app, {"Authorization": "Bearer wrong-token-0"}))[0] == 401
        assert _serve(server, ping)[0] == 400  # the web chat's token opens it (then: no session yet)
        app.config.set("mcp_config", "token", "mcp-only-token-1")
        assert _serve(server, ping)[0] == 401
        assert _serve(server, ping, _headers(app, {"Authorization": "Bearer mcp-only-token-1"}))[0] == 400
        app.config.unset("mcp_config", "token")
        app.config.set("gw_config", "ws_token", auth.OFF)
        assert _serve(server, ping, {"Content-Type": "application/json"})[0] == 400  # no token needed at all
        for origin, allowed in (("http://evil.example", False), ("null", False), ("http://board.local:18789", True),
                                ("http://localhost:6274", True), ("http://[::1]:8080", True)):
            status = _serve(server, ping, _headers(app, {"Origin": origin, "Host": "board.local:18789"}))[0]
            assert (status != 403) == allowed, origin
        assert _serve(server, ping, _headers(app, {"Content-Type": "text/plain"}))[0] == 415
        assert _serve(server, ping, _headers(app, {"Accept": "text/html"}))[0] == 406
        request = _Request(b"", _headers(app))
        request.content_length, request.stream = _BIG, _Stream(_BIG)  # too long to be read by microdot
        response = run(server.serve(request))
        assert response.status_code == 413 and b"at most 16384" in _body_of(response)
        assert request.stream.left == 0  # read and dropped: a client still sending would miss the answer
    finally:
        remove_tree(app.top)


def _tools_of(pieces, tail):
    """(bytes written, the tools) of a tools/list result's pieces, a tool's JSON parsed at a time (the whole list
    is 13 KB: more than one run of MicroPython's unit heap may hold)."""
    written, listed, tool = 0, [], None
    for piece in pieces:
        piece = bytes(piece)
        written += len(piece)
        if tool is None:  # the head and ask
            assert piece.startswith(b'{"tools": [')
            listed.append(json.loads(piece[len(b'{"tools": ['):]))
            tool = b""
        elif piece == b", " or piece == b"]" + tail + b"}":
            if tool:
                listed.append(json.loads(tool))
            tool = b""
        else:
            tool += piece
    assert piece == b"]" + tail + b"}" and tool == b""
    return written, listed


def test_the_tool_list_is_written_from_defs_a_tool_at_a_time_at_its_stated_length():
    app = _app("mcp-list")
    try:
        plain = _TurnTool()
        app.registry.add(plain)
        app.registry.add(_RemoteTool())
        tools = Tools(app)
        for tail in (b"", b', "resultType": "complete", "ttlMs": 0, "cacheScope": "private"'):
            length, pieces = tools.listing(tail)
            written, listed = _tools_of(pieces, tail)
            assert written == length  # the Content-Length it states
            names = [tool["name"] for tool in listed]
            assert names[0] == "ask" and listed[0] == json.loads(ASK)
            assert "mcp__ha__light_on" not in names and "turn_probe" in names
            assert "find_tools" not in names  # a client is given every tool: finding them is the board's model's
            assert names[1:] == sorted(name for name in app.registry.tools
                                       if not name.startswith("mcp__") and name != "find_tools")
            for tool in listed[1:]:
                known = app.registry.tools[tool["name"]]
                assert tool["inputSchema"] == known.schema and tool["description"] == known.description
                assert tool["annotations"] == {"readOnlyHint": not known.acting}
                assert set(tool) == {"name", "description", "inputSchema", "annotations"}
        assert isinstance(app.registry.tools["recall"], LazyTool)
    finally:
        remove_tree(app.top)


def test_a_call_runs_through_the_registry_as_the_mcp_role_and_unattended():
    app = _app("mcp-call")
    try:
        probe = _TurnTool()
        app.registry.add(probe)
        app.registry.add(_RemoteTool())
        tools = Tools(app)
        assert run(tools.call({"name": "turn_probe", "arguments": {}}, "Claude_Desktop")) == ("ran", False)
        turn = probe.turns[-1]
        assert (turn.channel, turn.chat_id, turn.role, turn.unattended) == ("mcp", "Claude_Desktop", "observer", True)
        refused, failed = run(tools.call({"name": "gpio_write", "arguments": {"pin": 4, "value": 1}}, "c"))
        assert failed and "needs the operator role" in refused
        app.config.set("mcp_config", "role", "operator")
        run(tools.call({"name": "turn_probe"}, "c"))
        assert probe.turns[-1].role == "operator"
        nvs = NVS("mcp_config")  # not a role (config_set refuses it; an older firmware's): the least trusted one
        nvs.set_blob("role", "emperor")
        nvs.commit()
        run(tools.call({"name": "turn_probe"}, "c"))
        assert probe.turns[-1].role == "observer"
        policy.set_level(app.config, "turn_probe", "confirm", probe)  # nobody can press Approve over MCP
        asked, failed = run(tools.call({"name": "turn_probe"}, "c"))
        assert failed and "nobody is there to press Approve" in asked
        assert len(probe.turns) == 3  # not run
        for params, words in (({"name": "mcp__ha__light_on"}, "Unknown tool: mcp__ha__light_on"),
                              ({"name": "nope"}, "Unknown tool: nope"), ({}, "needs the tool's name"),
                              ({"name": "recall", "arguments": [1]}, "arguments must be an object")):
            exc = raises(RpcError, run, tools.call(params, "c"))
            assert exc.code == -32602 and words in exc.message
        tools.running = CALLS_MAX
        busy, failed = run(tools.call({"name": "get_current_time"}, "c"))
        assert failed and "try again in a moment" in busy
    finally:
        remove_tree(app.top)


def test_ask_puts_a_turn_of_the_agent_on_the_bus_and_answers_with_its_reply():
    app = _app("mcp-ask")
    try:
        asks = app.add_channel(Asks(app))  # as the MCP server adds it at the first ask
        assert app.channels["mcp"] is asks and asks.name == "mcp"

        async def agent(reply, kind="reply"):  # the agent's part: a turn taken, its reply dispatched
            question = await app.bus.inbound.get()
            await asks.send(Message("mcp", question.chat_id, reply, {"kind": kind, "request": question.meta}))
            return question

        async def ask(reply, kind="reply"):
            turn = asyncio.create_task(agent(reply, kind))
            answer = await asks.ask("Claude_Desktop", "what is the temperature?", "operator")
            return answer, await turn

        async def main():  # one loop: the bus's events belong to it
            answer, question = await ask("It is 21 degrees.")
            assert answer == ("It is 21 degrees.", False) and question.channel == "mcp"
            assert question.chat_id == "Claude_Desktop" and question.content == "what is the temperature?"
            assert question.meta["mcp"] == "Claude_Desktop" and question.meta["role"] == "operator"
            answer = (await ask("Today's token budget is used up.", "refused"))[0]
            assert answer == ("Today's token budget is used up.", True)
            assert asks.waiting == {}
            await asks.send(Message("mcp", "Claude_Desktop", "late", {"kind": "reply", "request": {"ask": 99}}))
            asks.waiting = {n: None for n in range(ASKS_MAX)}
            busy, failed = await asks.ask("c", "hi", "observer")
            assert failed and "busy" in busy and app.bus.inbound.empty()

        run(main())
    finally:
        remove_tree(app.top)


def test_the_owner_s_memory_and_profile_are_neither_listed_nor_read_for_a_client_that_is_not_the_owner():
    from mimi import platform

    app = _app("mcp-not-owner")
    try:
        write(app.flash.memory_path, "- the owner's door code is 4711\n")
        write(app.flash.user_path, "- Name: Ana\n")
        server = Server(app)
        session = _initialize(server)[0]
        for role in ("observer", "operator"):  # mcp_role: every MCP client acts with it
            app.config.set("mcp_config", "role", role)
            listed = _in_session(server, session, {"jsonrpc": "2.0", "id": 2, "method": "resources/list"})[2]
            assert [r["uri"] for r in listed["result"]["resources"]] == ["mimi://config/SOUL.md"]
            for uri in ("mimi://memory/MEMORY.md", "mimi://config/USER.md",
                        "mimi://memory/daily/{}.md".format(platform.utc_date())):
                read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}
                answer = _in_session(server, session, read)[2]
                assert "result" not in answer and answer["error"]["code"] == -32002, answer
                assert "is the owner's" in answer["error"]["message"] and "4711" not in json.dumps(answer)
            read["params"]["uri"] = "mimi://config/SOUL.md"
            assert "result" in _in_session(server, session, read)[2]  # the personality is everyone's
            found = run(server.methods.call("tools/call", {"name": "recall", "arguments": {"query": "door"}}, "c",
                                            False))[1]
            said = b"".join(bytes(p) for p in found)
            assert b'"isError": true' in said and b"needs the owner role" in said and b"4711" not in said
            found = run(server.methods.call("tools/call", {"name": "read_file", "arguments": {
                "path": "memory/MEMORY.md"}}, "c", False))[1]
            said = b"".join(bytes(p) for p in found)
            assert b'"isError": true' in said and b"only the owner may read" in said and b"4711" not in said
    finally:
        remove_tree(app.top)


def test_the_resources_are_the_owner_s_markdown_files_read_only_and_cut_at_the_cap():
    from mimi import platform

    app = _app("mcp-resources")
    try:
        app.config.set("mcp_config", "role", "owner")  # the owner's files are the owner's MCP clients' only
        server = Server(app)
        session = _initialize(server)[0]
        listed = _in_session(server, session, {"jsonrpc": "2.0", "id": 2, "method": "resources/list"})[2]
        uris = [r["uri"] for r in listed["result"]["resources"]]
        today = "mimi://memory/daily/{}.md".format(platform.utc_date())
        assert uris == ["mimi://config/SOUL.md", "mimi://config/USER.md", "mimi://memory/MEMORY.md", today]
        write(app.flash.soul_path, 'I am "Mimi".\n\u00e9t\u00e9 \U0001f331\n')
        read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "mimi://config/SOUL.md"}}
        content = _in_session(server, session, read)[2]["result"]["contents"][0]
        assert content == {"uri": "mimi://config/SOUL.md", "mimeType": "text/markdown",
                           "text": 'I am "Mimi".\n\u00e9t\u00e9 \U0001f331\n'}
        with open(app.flash.memory_path, "w") as f:  # longer than the cap, written a line at a time
            f.write("- the owner likes tea\n")
            for _ in range(_BIG // 100):
                f.write("m" * 99 + "\n")
        pieces = [bytes(p) for p in run(server.methods.call("resources/read", {"uri": "mimi://memory/MEMORY.md"},
                                                            "c", False))[1]]
        assert pieces[0] == b'{"contents": [{"uri": "mimi://memory/MEMORY.md", "mimeType": "text/markdown", "text": "'
        assert pieces[1].startswith(b"- the owner likes tea\\n") and pieces[-1] == b'"}]}'
        assert max(len(p) for p in pieces) < 2048  # a slice at a time: never the file whole
        assert json.loads(b'"' + b"".join(pieces[-3:-1]) + b'"').endswith(
            "[cut here: the file is longer than {} bytes]".format(RESOURCE_MAX))
        newlines = 1 + (RESOURCE_MAX - 22) // 100  # in the first RESOURCE_MAX bytes, each escaped as 2 bytes
        assert sum(len(p) for p in pieces[1:-2]) == RESOURCE_MAX + newlines
        read["params"]["uri"] = today
        assert _in_session(server, session, read)[2]["result"]["contents"][0]["text"] == ""  # none written yet
        read["params"]["uri"] = "mimi://config/../../etc/passwd"
        error = _in_session(server, session, read)[2]["error"]
        assert error["code"] == -32002 and error["message"].startswith("Resource not found")
        call = {"jsonrpc": "2.0", "id": 4, "method": "resources/write", "params": {"uri": today}}
        assert _in_session(server, session, call)[2]["error"]["code"] == -32601  # read-only
    finally:
        remove_tree(app.top)


def test_client_names_become_safe_chat_names():
    assert client_name({"name": "Claude Desktop"}) == "Claude_Desktop"
    assert client_name({"name": "claude-code"}) == "claude-code"
    assert client_name({"name": "../../x" + "y" * 50}) == "x" + "y" * 25  # its first 32 characters, made safe
    assert client_name({"name": 5}) == client_name({}) == client_name({"name": "\u00e9\u00e9"}) == "client"


def test_the_console_commands_set_the_token_and_the_role():
    from mimi import platform

    app = _app("mcp-commands")
    lines = []
    saved, platform.console_write = platform.console_write, lines.append
    try:
        commands = app.console.commands
        run(commands.execute("set_mcp_token short"))
        assert app.config.get("mcp_config", "token") == "" and "8 to 128" in lines[-1] and "short" not in lines[-1]
        run(commands.execute("set_mcp_token a-long-enough-token"))
        assert app.config.get("mcp_config", "token") == "a-long-enough-token" and "saved" in lines[-1]
        run(commands.execute("set_mcp_token off"))
        assert app.config.get("mcp_config", "token") == "" and "web chat's token" in lines[-1]
        run(commands.execute("mcp_role"))
        assert lines[-1].startswith("mcp_role: observer")
        run(commands.execute("mcp_role emperor"))
        assert "role must be one of observer, operator, owner" in lines[-1]
        run(commands.execute("mcp_role operator"))
        assert app.config.get("mcp_config", "role") == "operator" and "saved" in lines[-1]
    finally:
        platform.console_write = saved
        remove_tree(app.top)
