# web_search's code: Brave Search or Tavily, key set with set_search_key; answers as numbered result lines.
from mimi.platform import const
from mimi.settings import mask
from mimi.tools.html_text import strip_tags
from mimi.tools.http_text import ServiceError, query, request_json
from mimi.tools.registry import ToolError
from mimi.tools.web import COUNT_DEFAULT, COUNT_MAX, PROVIDERS

_SNIPPET_MAX = const(400)  # characters of one result's snippet
TITLE_MAX = const(150)
ENDPOINTS = {"brave": "https://api.search.brave.com/res/v1/web/search", "tavily": "https://api.tavily.com/search"}
PROVIDER_NAMES = {"brave": "Brave Search", "tavily": "Tavily"}
NOT_CONFIGURED = "web search is not configured: set_search_key <key>"


def _settings(cfg):
    if cfg is None:
        raise ToolError(NOT_CONFIGURED)
    key = cfg.get("web_config", "search_key")
    if not key:
        raise ToolError(NOT_CONFIGURED)
    provider = cfg.get("web_config", "search_provider").strip().lower()
    if provider not in PROVIDERS:
        raise ToolError("web_config.search_provider must be brave or tavily, not '{}' "
                        "(config_set web_config.search_provider brave)".format(provider))
    return key, provider, cfg.get("web_config", "search_api") or ENDPOINTS[provider]


def _one_line(text, most):
    text = " ".join(str(text or "").split())
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def format_results(search_query, provider, items):
    """items: [(title, url, snippet)] -> the numbered text the model reads."""
    if not items:
        return "No results for '{}' ({}).".format(search_query, PROVIDER_NAMES[provider])
    lines = ["Results for '{}' ({}):".format(search_query, PROVIDER_NAMES[provider])]
    for number, (title, url, snippet) in enumerate(items, 1):
        lines.append("{}. {}".format(number, _one_line(title, TITLE_MAX) or "(untitled)"))
        lines.append("   " + str(url))
        if snippet:
            lines.append("   " + _one_line(snippet, _SNIPPET_MAX))
    return "\n".join(lines)


def brave_items(data, count):
    """Brave's WebSearchApiResponse -> [(title, url, snippet)]; titles and snippets carry HTML."""
    web = data.get("web") if isinstance(data, dict) else None
    results = web.get("results") if isinstance(web, dict) else None
    items = []
    for item in results if isinstance(results, list) else ():
        if isinstance(item, dict) and item.get("url"):
            items.append((strip_tags(item.get("title") or ""), item["url"],
                          strip_tags(item.get("description") or "")))
    return items[:count]


def tavily_items(data, count):
    """Tavily's search answer -> [(title, url, snippet)] (plain text already)."""
    results = data.get("results") if isinstance(data, dict) else None
    items = []
    for item in results if isinstance(results, list) else ():
        if isinstance(item, dict) and item.get("url"):
            items.append((item.get("title") or "", item["url"], item.get("content") or ""))
    return items[:count]


def _detail(data, raw):
    """The provider's own words about an error (Brave: error.detail; Tavily: detail.error)."""
    if isinstance(data, dict):
        for outer, inner in (("error", "detail"), ("detail", "error"), ("error", "message")):
            value = data.get(outer)
            if isinstance(value, dict) and isinstance(value.get(inner), str):
                return value[inner]
            if isinstance(value, str) and value:
                return value
    return " ".join(raw.split())[:120]


def _code(data):
    error = data.get("error") if isinstance(data, dict) else None
    return error.get("code", "") if isinstance(error, dict) else ""


def failure(provider, status, data, raw):
    """The ToolError text for a non-200 answer; it never contains the key."""
    who = PROVIDER_NAMES[provider]
    detail = _detail(data, raw)
    if status in (401, 403) or _code(data) == "SUBSCRIPTION_TOKEN_INVALID":
        return "{} refused the search key (HTTP {}: {}); set a valid one with set_search_key <key>".format(
            who, status, detail)
    if status == 429:
        return "{} rate limit reached (HTTP 429: {}); try again in a little while".format(who, detail)
    if status in (402, 432, 433):
        return "{} plan limit reached (HTTP {}: {})".format(who, status, detail)
    return "{} search failed (HTTP {}: {})".format(who, status, detail)


async def search(cfg, search_query, count=COUNT_DEFAULT):
    """The result lines for a query; ToolError with a clear message on any failure."""
    key, provider, endpoint = _settings(cfg)
    search_query = search_query.strip()
    if not search_query:
        raise ToolError("web_search needs a non-empty query")
    count = max(1, min(COUNT_MAX, count))
    try:
        if provider == "brave":
            url = endpoint + "?" + query((("q", search_query), ("count", count), ("result_filter", "web")))
            status, data, raw = await request_json("GET", url, {"X-Subscription-Token": key})
        else:
            body = {"query": search_query, "max_results": count, "search_depth": "basic"}
            status, data, raw = await request_json("POST", endpoint, {"Authorization": "Bearer " + key}, body)
    except ServiceError as exc:
        raise ToolError("{} is unreachable: {}".format(PROVIDER_NAMES[provider], str(exc).replace(key, mask(key))))
    if status != 200:
        raise ToolError(failure(provider, status, data, raw).replace(key, mask(key)))
    if not isinstance(data, dict):
        raise ToolError("{} answered with something that is not search results".format(PROVIDER_NAMES[provider]))
    items = brave_items(data, count) if provider == "brave" else tavily_items(data, count)
    return format_results(search_query, provider, items)


async def run(input, config):
    count = input.get("count", COUNT_DEFAULT)
    return await search(config, input["query"], count if isinstance(count, int) else COUNT_DEFAULT)
