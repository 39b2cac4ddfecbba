# Claude's MCP connector in a Messages request, refused as the real API refuses it: mcp_servers needs the beta
# header (without it the field is unknown: "mcp_servers: Extra inputs are not permitted", as measured), each
# server is {type: "url", url: https://..., name, authorization_token?}, and with mcp-client-2025-11-20 each
# server is used by exactly one mcp_toolset in tools (the documented rules; the API publishes no wording for
# them, so these messages follow its field-path style). The deprecated mcp-client-2025-04-04 took the tool
# settings in the server itself (tool_configuration) and no toolsets.
CURRENT_BETA = "mcp-client-2025-11-20"
DEPRECATED_BETA = "mcp-client-2025-04-04"
TOOLSET = "mcp_toolset"
SERVER_FIELDS = ("type", "url", "name", "authorization_token")
TOOLSET_FIELDS = ("type", "mcp_server_name", "default_config", "configs", "cache_control")


def betas_of(headers):
    """The anthropic-beta header's values (comma-separated, possibly repeated headers joined)."""
    return [beta.strip() for beta in (headers or {}).get("anthropic-beta", "").split(",") if beta.strip()]


def is_toolset(tool, betas):
    """A tools entry this module checks (an mcp_toolset under the current beta); without the beta it is an
    unknown tool type, which the tools check refuses by its tag."""
    return isinstance(tool, dict) and tool.get("type") == TOOLSET and CURRENT_BETA in betas


def check(body, betas, bad):
    """Refuse (bad(message)) what the real API refuses about mcp_servers and the mcp_toolsets."""
    servers = body.get("mcp_servers")
    current, deprecated = CURRENT_BETA in betas, DEPRECATED_BETA in betas
    if servers is not None and not (current or deprecated):
        bad("mcp_servers: Extra inputs are not permitted")
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    toolsets = [(i, tool) for i, tool in enumerate(tools) if is_toolset(tool, betas)]
    names = _check_servers(servers, current, bad) if servers is not None else []
    used = {}
    for i, toolset in toolsets:
        where = "tools.{}".format(i)
        for field in toolset:
            if field not in TOOLSET_FIELDS:
                bad("{}.{}: Extra inputs are not permitted".format(where, field))
        name = toolset.get("mcp_server_name")
        if not isinstance(name, str):
            bad("{}.mcp_server_name: Field required".format(where))
        if name not in names:
            bad("{}.mcp_server_name: MCP server '{}' is not defined in mcp_servers".format(where, name))
        if name in used:
            bad("tools: MCP server '{}' is referenced by more than one mcp_toolset".format(name))
        used[name] = i
        for field in ("default_config", "configs"):
            if field in toolset and not isinstance(toolset[field], dict):
                bad("{}.{}: Input should be a valid dictionary".format(where, field))
    if current:
        for i, name in enumerate(names):
            if name not in used:
                bad("mcp_servers.{}: MCP server '{}' is not referenced by any mcp_toolset in tools".format(i, name))


def _check_servers(servers, current, bad):
    if not isinstance(servers, list):
        bad("mcp_servers: Input should be a valid list")
    names = []
    for i, server in enumerate(servers):
        where = "mcp_servers.{}".format(i)
        if not isinstance(server, dict):
            bad("{}: Input should be a valid dictionary".format(where))
        for field in server:
            if field not in SERVER_FIELDS and (current or field != "tool_configuration"):
                bad("{}.{}: Extra inputs are not permitted".format(where, field))
        if server.get("type") != "url":
            bad("{}.type: Input should be 'url'".format(where))
        url = server.get("url")
        if not isinstance(url, str):
            bad("{}.url: Field required".format(where))
        if not url.startswith("https://"):
            bad("{}.url: MCP server URL must use https".format(where))
        name = server.get("name")
        if not isinstance(name, str) or not name:
            bad("{}.name: Field required".format(where))
        token = server.get("authorization_token")
        if token is not None and not isinstance(token, str):
            bad("{}.authorization_token: Input should be a valid string".format(where))
        if name in names:
            bad("mcp_servers: MCP server names must be unique")
        names.append(name)
    return names
