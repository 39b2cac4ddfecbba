# web_fetch's code: GET one http(s) page, follow redirects, keep text only, HTML reduced to readable text.
from mimi.net import http
from mimi.platform import const
from mimi.tools.html_text import HtmlText
from mimi.tools.http_text import USER_AGENT, Decoder, clean_url, media_type, resolve
from mimi.tools.registry import ToolError
from mimi.tools.web import TEXT_MAX, TEXT_MIN

_FETCH_MAX = const(65536)  # raw body bytes read at most; the rest of a page is never downloaded
_REDIRECTS_MAX = const(3)
READ_TIMEOUT_S = const(20)
_URL_SHOWN_MAX = const(300)
_PIECE = const(1024)
_SNIFF = const(512)  # leading bytes checked for NUL bytes, the mark of a binary file
_REDIRECTS = (301, 302, 303, 307, 308)

# Media types read as text besides text/*; "+xml" and "+json" suffixes count too.
TEXT_TYPES = ("application/json", "application/xml", "application/xhtml+xml", "application/javascript",
              "application/ecmascript", "application/x-javascript", "application/ld+json",
              "application/rss+xml", "application/atom+xml", "application/x-yaml", "application/yaml",
              "application/toml", "application/csv", "application/x-sh", "image/svg+xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")


def is_text(kind):
    """True for a media type web_fetch reads ('' means the server did not say)."""
    return (not kind or kind.startswith("text/") or kind in TEXT_TYPES or kind.endswith("+xml")
            or kind.endswith("+json"))


class PlainText:
    """The HtmlText interface for text that is not HTML: kept as it is, up to `limit` characters."""

    def __init__(self, limit):
        self.limit = limit
        self.full = False
        self.title = ""
        self._parts = []
        self._size = 0

    def feed(self, piece):
        room = self.limit - self._size
        if len(piece) > room:
            piece = piece[:room]
            self.full = True
        if piece:
            self._parts.append(piece)
            self._size += len(piece)

    def close(self):
        pass

    def text(self):
        return "".join(self._parts).strip()


def _shown(url):
    return url if len(url) <= _URL_SHOWN_MAX else url[:_URL_SHOWN_MAX] + "\u2026"


async def _open(url):
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html,text/plain;q=0.9,*/*;q=0.5",
               "Accept-Encoding": "identity"}
    try:
        return await http.request("GET", url, headers, None, READ_TIMEOUT_S)
    except (OSError, ValueError) as exc:  # http.HTTPError and TLSError are OSErrors with clear text
        raise ToolError("could not fetch {}: {}".format(_shown(url), exc))


async def fetch(url, limit=TEXT_MAX):
    """The page's text with a URL/Title header; ToolError (clear text) on any failure."""
    try:
        url = clean_url(url)
    except ValueError:
        raise ToolError("web_fetch needs a full http:// or https:// URL, not '{}'".format(_shown(url)))
    for _ in range(_REDIRECTS_MAX + 1):
        resp = await _open(url)
        try:
            if resp.status in _REDIRECTS:
                url = _next_url(url, resp)
                continue
            return await _read(resp, url, limit)
        except OSError as exc:  # the connection broke while reading
            raise ToolError("could not read {}: {}".format(_shown(url), exc))
        finally:
            await resp.aclose()
    raise ToolError("too many redirects (more than {}), stopped at {}".format(_REDIRECTS_MAX, _shown(url)))


def _next_url(url, resp):
    location = resp.headers.get("location", "")
    if not location:
        raise ToolError("{} redirected (HTTP {}) without saying where".format(_shown(url), resp.status))
    try:
        return clean_url(resolve(url, location))
    except ValueError:
        raise ToolError("{} redirected to {}, which web_fetch cannot follow".format(_shown(url), _shown(location)))


async def _read(resp, url, limit):
    if resp.status >= 400:
        raise ToolError("{} answered HTTP {} {}".format(_shown(url), resp.status, resp.reason).strip())
    kind, charset = media_type(resp.headers.get("content-type", ""))
    if not is_text(kind):
        raise ToolError("{} is {}, not text: web_fetch reads web pages and text files only".format(
            _shown(url), kind))
    encoding = resp.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise ToolError("{} sent a {}-compressed body, which web_fetch cannot read".format(_shown(url), encoding))
    sink = HtmlText(limit) if kind in HTML_TYPES else PlainText(limit)
    decoder = Decoder(charset)
    received = 0
    cut = False
    while True:
        data = await resp.read_some(_PIECE)
        if not data:
            sink.feed(decoder.decode(b"", True))
            break
        if received < _SNIFF and b"\x00" in data[: _SNIFF - received]:
            raise ToolError("{} is binary data, not text: web_fetch reads web pages and text files only".format(
                _shown(url)))
        received += len(data)
        sink.feed(decoder.decode(data))
        if sink.full or received >= _FETCH_MAX:
            cut = True
            break
    sink.close()
    return _result(url, sink, cut, received, limit)


def _result(url, sink, cut, received, limit):
    lines = ["URL: " + _shown(url)]
    if sink.title:
        lines.append("Title: " + sink.title)
    text = sink.text()
    lines.append("")
    lines.append(text or "(the page has no readable text)")
    if cut:
        if sink.full:
            lines.append("[cut at {} characters of text]".format(limit))
        else:
            lines.append("[cut: only the first {} KB of the page were read]".format(received // 1024))
    return "\n".join(lines)


async def run(input, config=None):
    limit = input.get("max_chars", TEXT_MAX)
    limit = TEXT_MAX if not isinstance(limit, int) else min(TEXT_MAX, max(TEXT_MIN, limit))
    return await fetch(input["url"], limit)
