# The fake Anthropic API takes Claude's MCP connector as the real one does: mcp_servers only with the beta
# header, public https servers each used by one mcp_toolset, and it streams mcp_tool_use / mcp_tool_result.
import json

import pytest

from host_sim.fake_anthropic import FakeAnthropic, mcp_tool
from tests.host.test_fake_anthropic import decoded, error_body, post, request_body, streamed_text

BETA = {"anthropic-beta": "mcp-client-2025-11-20"}
SERVER = {"type": "url", "url": "https://mcp.example.com/mcp", "name": "docs", "authorization_token": "t0k"}
TOOLSET = {"type": "mcp_toolset", "mcp_server_name": "docs"}


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _connector(servers=(SERVER,), tools=(TOOLSET,)):
    return request_body(mcp_servers=list(servers), tools=list(tools))


def test_a_connector_request_with_its_beta_header_is_accepted_and_recorded(fake):
    device_tool = {"name": "get_current_time", "description": "d", "input_schema": {"type": "object"}}
    body = _connector(tools=(device_tool, TOOLSET))
    status, _, data, _ = post(fake.url, body, dict(BETA, **{"anthropic-beta": "web-fetch-2025-09-10, "
                                                            "mcp-client-2025-11-20"}))
    assert status == 200 and streamed_text(decoded(data)) == "You said: hello there"
    assert fake.requests[-1]["body"]["mcp_servers"] == [SERVER]


@pytest.mark.parametrize("headers, body, words", [
    ({}, _connector(), "mcp_servers: Extra inputs are not permitted"),  # the beta header forgotten (measured)
    ({}, request_body(tools=[TOOLSET]), "Input tag 'mcp_toolset' found using 'type' does not match"),
    (BETA, _connector([dict(SERVER, url="http://mcp.example.com/mcp")]), "mcp_servers.0.url: MCP server URL "
                                                                         "must use https"),
    (BETA, _connector([dict(SERVER, type="sse")]), "mcp_servers.0.type: Input should be 'url'"),
    (BETA, _connector([{"type": "url", "url": "https://x/mcp"}], ()), "mcp_servers.0.name: Field required"),
    (BETA, _connector([SERVER], ()), "mcp_servers.0: MCP server 'docs' is not referenced by any mcp_toolset"),
    (BETA, _connector([SERVER], [TOOLSET, TOOLSET]), "referenced by more than one mcp_toolset"),
    (BETA, _connector([SERVER], [dict(TOOLSET, mcp_server_name="other")]),
     "tools.0.mcp_server_name: MCP server 'other' is not defined in mcp_servers"),
    (BETA, _connector([SERVER, SERVER], [TOOLSET]), "mcp_servers: MCP server names must be unique"),
    (BETA, _connector([dict(SERVER, tool_configuration={"enabled": True})]),
     "mcp_servers.0.tool_configuration: Extra inputs are not permitted"),  # the deprecated form, current beta
])
def test_connector_requests_the_real_api_refuses(fake, headers, body, words):
    status, _, data, _ = post(fake.url, body, headers)
    kind, message = error_body(data)
    assert (status, kind) == (400, "invalid_request_error") and words in message, message


def test_the_deprecated_beta_takes_tool_configuration_and_no_toolset(fake):
    body = request_body(mcp_servers=[dict(SERVER, tool_configuration={"enabled": True})])
    status, _, _, _ = post(fake.url, body, {"anthropic-beta": "mcp-client-2025-04-04"})
    assert status == 200


def test_a_scripted_mcp_tool_call_streams_its_blocks_as_the_real_api(fake):
    fake.script(mcp_tool("docs", "search_docs", {"q": "romfs"}, "ROMFS came in 1.25.", "It came in 1.25.",
                         call_seconds=0))
    status, _, data, _ = post(fake.url, _connector(), BETA)
    events = decoded(data)
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["mcp_tool_use", "mcp_tool_result", "text"]
    assert starts[0]["server_name"] == "docs" and starts[0]["name"] == "search_docs" and starts[0]["input"] == {}
    pieces = "".join(d["delta"]["partial_json"] for n, d in events
                     if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta")
    assert json.loads(pieces) == {"q": "romfs"} and starts[1]["tool_use_id"] == starts[0]["id"]
    assert starts[1]["content"] == [{"type": "text", "text": "ROMFS came in 1.25."}]
    assert status == 200 and streamed_text(events) == "It came in 1.25."
