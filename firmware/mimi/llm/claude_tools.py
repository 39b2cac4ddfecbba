# Claude's own tools: web search (and web fetch, behind its beta header) run on Anthropic's side; links; the
# MCP connector's toolsets (remote MCP servers the API calls itself, behind their beta header); the tool search
# tool (the device's tools beyond the core set sent deferred: Claude loads the ones a search finds).
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
_LINK_TITLE_MAX = const(40)


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
    """A device tool's definition with "defer_loading": true: written from the kept definition (a built-in's
    LazyTool, an MCP server's tool), its closing brace swapped for the flag, nothing copied."""

    is_json = True

    def __init__(self, tool):
        self.tool = tool

    @property
    def name(self):
        return self.tool.name

    def __len__(self):
        return len(self.tool) + len(_DEFER) - 1

    def chunks(self):
        held = None
        for chunk in self.tool.chunks():
            if held is not None:
                yield held
            held = chunk
        yield held[:-1]  # its closing brace
        yield _DEFER


def _deferred(pair, core):
    name, tool = pair
    if name in core:
        return pair
    if isinstance(tool, dict):
        tool = dict(tool)
        tool["defer_loading"] = True
        return name, tool
    return name, Deferred(tool)


def definitions(config, device_tools, searches_left=True, server=True, kept=None, defer=False):
    """The `tools` of a request: the device's own, with web_search (and web_fetch) swapped for Claude's
    server tools in server mode. Built the same way every time, so prompt caching keeps working. server False:
    a model other than Anthropic's (llm/models.py), which has no server tools: the device's search when it has
    a key, else none. kept: a [device list, key, tools] list its owner keeps (agent/loop.py): the same list again while
    nothing it depends on changed (the registry's list itself, the settings), no list built or sorted each turn.
    defer: device_tools are all the device's tools, sent with the tool search tool, the core set (tools/finder.py)
    loaded and the others deferred (find_tools left out: the search does its work)."""
    chosen = mode(config)
    if not server and chosen == SERVER:
        chosen = DEVICE if config.is_set(NS, "search_key") else OFF
    fetch = chosen == SERVER and fetch_on(config)
    uses = config.get(NS, "search_max_uses") if chosen == SERVER else 0
    key = (chosen, fetch, uses, searches_left, defer)
    if kept is not None and kept[0] is device_tools and kept[1] == key:
        return kept[2]
    drop = ()
    if chosen != DEVICE:
        drop = ("web_search", "web_fetch") if fetch else ("web_search",)
    named = [(_name(t), t) for t in device_tools or ()]  # names made once: a key= sort makes them per comparison
    if defer:
        from mimi.tools.registry import CORE, FIND_TOOLS

        drop = drop + (FIND_TOOLS,)
    if drop:
        named = [pair for pair in named if pair[0] not in drop]
    if defer:
        named = [_deferred(pair, CORE) for pair in named]
        named.append((TOOL_SEARCH, {"type": TOOL_SEARCH_TYPE, "name": TOOL_SEARCH}))
    if fetch:
        named.append(("web_fetch", {"type": FETCH_TYPE, "name": "web_fetch", "max_uses": uses,
                                    "max_content_tokens": _FETCH_CONTENT_TOKENS, "citations": {"enabled": True}}))
    if chosen == SERVER and searches_left:
        named.append(("web_search", {"type": SEARCH_TYPE, "name": "web_search", "max_uses": uses}))
    if chosen == SERVER or defer:
        named.sort(key=_first)  # one stable order, the registry's: by name
    tools = [pair[1] for pair in named] or None
    if kept is not None:
        kept[0], kept[1], kept[2] = device_tools, key, tools
    return tools


def _first(pair):
    return pair[0]


def has_server_tools(tools):
    for tool in tools or ():
        if isinstance(tool, dict) and "type" in tool:  # a built-in's LazyTool: a device tool
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


def _host(url):
    rest = url.split("://", 1)[-1]
    host = rest.split("/", 1)[0].split("?", 1)[0]
    return host[4:] if host.startswith("www.") else host


def _safe_url(url):
    """A URL that stays one Markdown link target (no spaces, quotes or closing parenthesis)."""
    return url.replace(" ", "%20").replace(")", "%29").replace("(", "%28").replace('"', "%22")


def _label(citation, url):
    title = citation.get("title")
    label = _host(url)
    if isinstance(title, str) and title.strip() and not label:
        label = title.strip()
    label = label.replace("[", "(").replace("]", ")")
    return label[:_LINK_TITLE_MAX] or "source"


def links(citations, linked):
    """' ([site](url), ...)' for the cited pages not linked yet in this reply (`linked` grows)."""
    out = []
    for citation in citations:
        url = citation.get("url") if isinstance(citation, dict) else None
        if not isinstance(url, str) or not (url.startswith("https://") or url.startswith("http://")):
            continue
        if url in linked:
            continue
        linked.append(url)
        out.append("[{}]({})".format(_label(citation, url), _safe_url(url)))
    return " ({})".format(", ".join(out)) if out else ""


def continued(content):
    """A paused reply's blocks to send back as the final assistant message: the API refuses a final text
    block that ends in whitespace."""
    if content and content[-1].get("type") == "text" and content[-1]["text"] != content[-1]["text"].rstrip():
        content = content[:-1] + [dict(content[-1], text=content[-1]["text"].rstrip())]
    return content
