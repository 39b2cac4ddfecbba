# The web tools (web_fetch, web_search, get_weather): their code (fetch, search, weather) loaded on first use;
# this module too is imported only at a first call or command (loading.LAZY, builtin_defs).
from mimi.platform import const, log
from mimi.tools.registry import Tool

# Limits the model reads in the schemas; the implementations use the same ones.
TEXT_MIN = const(200)  # fewest characters of page text a caller may ask for
TEXT_MAX = const(7500)  # most characters of page text returned (the registry caps results at 8 KB)
COUNT_DEFAULT = const(5)  # search results
COUNT_MAX = const(10)
DAYS_DEFAULT = const(3)  # forecast days
DAYS_MAX = const(7)
PROVIDERS = ("brave", "tavily")  # device-side web search (search.py)
TAVILY_KEY_PREFIX = "tvly-"

# The console commands (channels/commands.py add_lines; builtin_defs.COMMANDS keeps a copy for boot).
COMMANDS = (
    "\nset_search_key\tset_search_key <key> [brave|tavily]\t1\t2\tsave the web search API key (a tvly- key "
    "selects Tavily)\tmimi.tools.web:set_search_key(app.config)\t1"
    "\nset_search\tset_search [server|device|off|auto]\t0\t1\twho searches the web: Claude itself (server), "
    "this device with your key, or nobody\tmimi.tools.web:set_search(app.config)"
    "\n"
)


class _WebTool(Tool):
    """A tool whose code lives in mimi.tools.<code>, imported at its first call: about 45 KB of heap
    (html_text, fetch, search, weather, http_text) that a board whose owner never asks for the web
    never spends (BENCHMARKS.md, the heap diet)."""

    code = None  # the module with run(input, config)
    tier, acting, level = "operator", False, "autonomous"

    async def run(self, input):
        code = __import__("mimi.tools." + self.code, None, None, ["run"])
        return await code.run(input, self.app.config)


def set_search_key(cfg, key, provider=None):
    """The set_search_key console command: save the key; a tvly- key (or the word tavily) selects Tavily."""
    from mimi import platform
    from mimi.settings import mask

    if provider is None and key.strip().startswith(TAVILY_KEY_PREFIX):
        provider = "tavily"
    if provider is not None and provider.lower() not in PROVIDERS:
        raise ValueError("the search provider must be brave or tavily, not '{}'".format(provider))
    cfg.set("web_config", "search_key", key)
    if provider is not None:
        cfg.set("web_config", "search_provider", provider.lower())
    platform.console_write("web_config.search_key = {} (saved; provider {})\n".format(
        mask(cfg.get("web_config", "search_key")), cfg.get("web_config", "search_provider")))


async def set_search(cfg, mode=None):
    from mimi.llm import claude_tools

    if mode is not None:
        mode = mode.lower()
        if mode not in claude_tools.MODES + ("auto",):
            raise ValueError("set_search takes server, device, off or auto")
        cfg.set(claude_tools.NS, "search_mode", "" if mode == "auto" else mode)
    chosen = claude_tools.mode(cfg)
    said = {claude_tools.SERVER: "Claude searches the web itself (Anthropic's web_search, up to {} per request{}; "
                                 "no key needed, billed by Anthropic)".format(
                                     cfg.get("web_config", "search_max_uses"),
                                     ", web_fetch on" if claude_tools.fetch_on(cfg) else ""),
            claude_tools.DEVICE: "this device searches with your {} key (web_search tool)".format(
                cfg.get("web_config", "search_provider")),
            claude_tools.OFF: "no web search"}[chosen]
    auto = "" if cfg.get(claude_tools.NS, "search_mode") else " (auto: set_search server|device|off to choose)"
    if not auto and chosen == claude_tools.OFF:
        pass
    elif chosen == claude_tools.OFF:  # auto on a small board: Claude's 64 KB result lines need the heap
        auto = " (auto on a small board: set_search server for Claude's, whose 64 KB results need the heap)"
    log("search: {}: {}{}".format(chosen, said, auto))
    if chosen == claude_tools.DEVICE and not cfg.is_set("web_config", "search_key"):
        log("  no search key is set yet: set_search_key <key> [brave|tavily]")


class WebFetch(_WebTool):
    name = "web_fetch"
    code = "fetch"
    description = (
        "Fetch a web page or text file by URL (http or https GET) and return its readable text: HTML is reduced "
        "to plain text without scripts or styling; binary files are refused and long pages cut. Use it to read "
        "a page found with web_search or a URL the user gave.")
    schema = {"type": "object", "properties": {
        "url": {"type": "string", "description": "The full http:// or https:// URL"},
        "max_chars": {"type": "integer", "description": "Most characters of text to return ({}-{}, default {})"
                      .format(TEXT_MIN, TEXT_MAX, TEXT_MAX)},
    }, "required": ["url"]}


class WebSearch(_WebTool):
    name = "web_search"
    code = "search"
    description = (
        "Search the web (Brave Search or Tavily) and get the top results as title, URL and snippet. Use it for "
        "current events, facts you are unsure of, or to find pages; read one with web_fetch.")
    schema = {"type": "object", "properties": {
        "query": {"type": "string", "description": "What to search for"},
        "count": {"type": "integer", "description": "How many results, 1-{} (default {})".format(
            COUNT_MAX, COUNT_DEFAULT)},
    }, "required": ["query"]}


class GetWeather(_WebTool):
    name = "get_weather"
    code = "weather"
    description = (
        "Current weather and a daily forecast (Open-Meteo) for a place name (like 'Berlin' or 'Paris, Texas') "
        "or for latitude and longitude. Temperatures in \u00b0C, wind in km/h.")
    schema = {"type": "object", "properties": {
        "place": {"type": "string", "description": "A town or city, optionally followed by ', country' or ', region'"},
        "latitude": {"type": "number",
                     "description": "Decimal degrees, -90 to 90 (with longitude, instead of place)"},
        "longitude": {"type": "number", "description": "Decimal degrees, -180 to 180"},
        "days": {"type": "integer",
                 "description": "Days of forecast, 1-{} (default {})".format(DAYS_MAX, DAYS_DEFAULT)},
    }, "required": []}


TOOLS = (WebFetch, WebSearch, GetWeather)
