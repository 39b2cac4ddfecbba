# The links a reply gives for the web pages it cites (Claude's web search and fetch, llm/claude_tools.py): each page
# once, as a Markdown link named by its site. Loaded when a passage comes with citations.
from mimi.platform import const

_LINK_TITLE_MAX = const(40)


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
