# Claude's MCP connector on both runtimes: remote servers go into the agent's requests (mcp_servers, a toolset
# each, the beta header), not into a call without tools; an mcp_tool_use block names its server for the draft
# and the connector's blocks are not kept: the turn keeps the answer's text only.
import asyncio
import json

from support import run
from test_mcp_client_protocol import _port, _read_request

from mimi.settings import Config
from mimi.llm.claude import JsonBody
from mimi.llm.models import Models

SERVERS = [{"type": "url", "url": "https://mcp.example.com/mcp", "name": "docs", "authorization_token": "t0k"}]
TOOLS = [{"name": "get_current_time", "description": "d", "input_schema": {"type": "object"}}]


def _event(name, data):
    return "event: {}\ndata: {}\n\n".format(name, json.dumps(data))


def _reply():
    """What the real API streams when Claude used a remote server's tool, then answered."""
    use = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search_docs", "server_name": "docs", "input": {}}
    result = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False,
              "content": [{"type": "text", "text": "MicroPython 1.25 added ROMFS."}]}
    events = [_event("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m",
        "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    events.append(_event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": use}))
    events.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "input_json_delta", "partial_json": '{"q": "romfs"}'}}))
    events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(_event("content_block_start", {"type": "content_block_start", "index": 1, "content_block": result}))
    events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events.append(_event("content_block_start", {"type": "content_block_start", "index": 2,
                                                 "content_block": {"type": "text", "text": ""}}))
    events.append(_event("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {
        "type": "text_delta", "text": "ROMFS came in 1.25."}}))
    events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 2}))
    events.append(_event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                           "usage": {"output_tokens": 9}}))
    events.append(_event("message_stop", {"type": "message_stop"}))
    body = "".join(events).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body


def _stream(tools, servers=SERVERS):
    """One Claude.stream call against a loopback API: (its request's headers and body, the assembler, the
    servers the draft was told about)."""
    port, seen, told = _port(), [], []

    async def handle(reader, writer):
        seen.append(await _read_request(reader))
        writer.write(_reply())
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    async def on_tool(name):
        told.append(name)

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        try:
            config = Config()
            config.set("llm_config", "api_base", "http://127.0.0.1:{}".format(port))
            config.set("llm_config", "api_key", "sk-ant-test")  # after: a key belongs to its URL's host
            models = Models(config)
            models.mcp_servers = servers
            return await models.claude().stream("system", [{"role": "user", "content": "hi"}], tools=tools, on_tool=on_tool)
        finally:
            server.close()
            await server.wait_closed()

    result = run(main())
    return seen[0], result, told


def test_the_agents_request_carries_the_servers_their_toolsets_and_the_beta_header():
    (headers, body), result, told = _stream(TOOLS)
    assert body["mcp_servers"] == SERVERS
    assert body["tools"] == TOOLS + [{"type": "mcp_toolset", "mcp_server_name": "docs"}]  # after the cached tools
    assert headers["anthropic-beta"] == "mcp-client-2025-11-20"
    assert told == ["docs"]  # the draft says "using docs..."
    assert result.content == [{"type": "text", "text": "ROMFS came in 1.25."}]  # the connector's blocks not kept
    assert result.text == "ROMFS came in 1.25." and result.tool_calls == [] and result.stop_reason == "end_turn"


def test_a_call_without_tools_and_a_board_without_remote_servers_send_no_connector():
    (headers, body), _, _ = _stream(None)  # a summary call (consolidation): no tools, no connector
    assert "mcp_servers" not in body and "anthropic-beta" not in headers and "tools" not in body
    (headers, body), _, _ = _stream(TOOLS, None)
    assert "mcp_servers" not in body and "anthropic-beta" not in headers and body["tools"] == TOOLS


def test_the_body_writes_the_servers_between_the_tools_and_the_messages():
    body = b"".join(JsonBody("s", [{"role": "user", "content": "hi"}], TOOLS, "m", 10, None, SERVERS).pieces())
    data = json.loads(body)
    assert data["mcp_servers"] == SERVERS and body.index(b'"mcp_servers"') < body.index(b'"messages"')
    assert b"mcp_servers" not in b"".join(JsonBody("s", [], TOOLS, "m", 10).pieces())
