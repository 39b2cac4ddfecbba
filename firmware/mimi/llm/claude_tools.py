# Claude's own tools: web search (and web fetch, behind its beta header) run on Anthropic's side (the links of the
# pages a reply cites: llm/citations.py); the MCP connector's toolsets (remote MCP servers the API calls itself,
# behind their beta header); the tool search tool (the device's tools beyond the core set sent deferred: Claude
# loads the ones a search finds).
import json

from mimi.jsontext import Streamed
from mimi.platform import const

SEARCH_TYPE = "web_search_20250305"
FETCH_TYPE = "web_fetch_20250910"
FETCH_BETA = "web-fetch-2025-09-10"  # the anthropic-beta header web_fetch needs
MCP_TOOLSET = "mcp_toolset"  # one per server of the request's mcp_servers, in its tools
MCP_BETA = "mcp-client-2025-11-20"  # the anthropic-beta header the MCP connector needs
TOOL_SEARCH_TYPE = "tool_search_tool_bm25_20251119"
TOOL_SEARCH = "tool_search_tool_bm25"
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"  # the anthropic-beta header deferred tools need
_FAMILIES = ("opus", "sonnet", "haiku")
_DEFER = b', "defer_loading": true}'
_FETCH_CONTENT_TOKENS = const(6000)  # a fetched page is cut here: keeps the stream's events bounded
SERVER, DEVICE, OFF = "server", "device", "off"
MODES = (SERVER, DEVICE, OFF)
NS = "web_config"
PAUSES_MAX = const(3)  # pause_turn continuations of one turn
_ACTIVITY = (("web_search", "searching the web"), ("web_fetch", "reading a web page"),
             (TOOL_SEARCH, "looking for a tool"))  # what a live draft says


def activity(name):
    """What a live draft says while Claude's own tool `name` runs: "searching the web", or "using <name>"."""
    for tool, doing in _ACTIVITY:
        if tool == name:
            return doing
    return "using " + name


def _name(tool):
    if isinstance(tool, dict):
        return tool.get("name")
    return tool.name  # a built-in's definition held in flash (tools/lazy_tool.py LazyTool)


def mode(config):
    """server, device or off: the setting, or by default the device's tool when it has a search key, else
    Claude's own, except on a small board (its result blocks come as 64 KB lines: off unless chosen)."""
    chosen = config.get(NS, "search_mode")
    if chosen in MODES:
        return chosen
    if config.is_set(NS, "search_key"):
        return DEVICE
    from mimi import board

    return OFF if board.small() else SERVER


def fetch_on(config):
    return mode(config) == SERVER and config.get(NS, "server_fetch") == 1


def searches_tools(model):
    """True for a Claude model that takes the tool search tool, 4.5 and later (claude-sonnet-4-5-20250929,
    claude-opus-4-6): the device's tools then go deferred; the others find them with find_tools (tools/finder.py)."""
    parts = (model or "").split("-")
    if len(parts) < 3 or parts[0] != "claude" or parts[1] not in _FAMILIES or not parts[2].isdigit():
        return False
    minor = parts[3] if len(parts) > 3 and parts[3].isdigit() and len(parts[3]) <= 2 else "0"
    return (int(parts[2]), int(minor)) >= (4, 5)


class Deferred(Streamed):
    """The device's tools beyond the core set, one item of the request's tools that writes each of them with
    "defer_loading": true (their kept definitions as they are, the closing brace swapped for the flag): one object for
    them all, made for the call."""

    is_json = True
    name = "~deferred"  # sorted after every tool's name: the core set and Claude's own come first

    def __init__(self, tools):
        self.tools = tools

    def chunks(self):
        for i, tool in enumerate(self.tools):
            if i:
                yield b", "
            if isinstance(tool, dict):  # an owner's tool
                tool = dict(tool)
                tool["defer_loading"] = True
                yield json.dumps(tool).encode()
                continue
            held = None
            for chunk in tool.chunks():
                if held is not None:
                    yield held
                held = chunk
            yield held[:-1]  # its closing brace
            yield _DEFER


def definitions(config, device_tools, searches_left=True, server=True, defer=False):
    """The `tools` of a request, made for the call: the device's own, with web_search (and web_fetch) swapped for
    Claude's server tools in server mode. Built the same way every time, so prompt caching keeps working. server
    False: a model other than Anthropic's (llm/models.py), which has no server tools: the device's search when it
    has a key, else none. defer: device_tools are all the device's tools, sent with the tool search tool, the core
    set (tools/registry.py CORE) loaded and the others deferred (find_tools left out: the search does its work)."""
    chosen = mode(config)
    if not server and chosen == SERVER:
        chosen = DEVICE if config.is_set(NS, "search_key") else OFF
    fetch = chosen == SERVER and fetch_on(config)
    uses = config.get(NS, "search_max_uses") if chosen == SERVER else 0
    drop = ()
    if chosen != DEVICE:
        drop = ("web_search", "web_fetch") if fetch else ("web_search",)
    named = [(_name(t), t) for t in device_tools or ()]  # names made once: a key= sort makes them per comparison
    if defer:
        from mimi.tools.registry import CORE, FIND_TOOLS

        drop = drop + (FIND_TOOLS,)
    if drop:
        named = [pair for pair in named if pair[0] not in drop]
    if defer and named:
        later = [pair[1] for pair in named if pair[0] not in CORE]
        named = [pair for pair in named if pair[0] in CORE] + [(Deferred.name, Deferred(later))] if later else named
        named.append((TOOL_SEARCH, {"type": TOOL_SEARCH_TYPE, "name": TOOL_SEARCH}))
    if fetch:
        named.append(("web_fetch", {"type": FETCH_TYPE, "name": "web_fetch", "max_uses": uses,
                                    "max_content_tokens": _FETCH_CONTENT_TOKENS, "citations": {"enabled": True}}))
    if chosen == SERVER and searches_left:
        named.append(("web_search", {"type": SEARCH_TYPE, "name": "web_search", "max_uses": uses}))
    if chosen == SERVER or defer:
        named.sort(key=_first)  # one stable order, the registry's: by name
    return [pair[1] for pair in named] or None


def _first(pair):
    return pair[0]


def has_server_tools(tools):
    """True when Claude may run a tool whose result comes back as one long event line (web search and fetch, the
    MCP connector's); the tool search tool's are short."""
    for tool in tools or ():
        if isinstance(tool, dict) and tool.get("type") not in (None, TOOL_SEARCH_TYPE):  # a dict without: an owner's
            return True
    return False


def beta_header(tools):
    """The anthropic-beta value a request with these tools needs (comma-separated), or None."""
    betas = []
    for tool in tools or ():
        kind = tool.get("type") if isinstance(tool, dict) else None
        beta = FETCH_BETA if kind == FETCH_TYPE else MCP_BETA if kind == MCP_TOOLSET else \
            TOOL_SEARCH_BETA if kind == TOOL_SEARCH_TYPE else None
        if beta and beta not in betas:
            betas.append(beta)
    return ",".join(betas) or None


def toolsets(servers):
    """The tools entries Claude's MCP connector needs: one mcp_toolset per server of mcp_servers (all its
    tools on), after the device's tools so the cached prefix stays as it was."""
    return [{"type": MCP_TOOLSET, "mcp_server_name": server["name"]} for server in servers]


def continued(content):
    """A paused reply's blocks to send back as the final assistant message: the API refuses a final text
    block that ends in whitespace."""
    if content and content[-1].get("type") == "text" and content[-1]["text"] != content[-1]["text"].rstrip():
        content = content[:-1] + [dict(content[-1], text=content[-1]["text"].rstrip())]
    return content
