# The web tools: HTML reducer, decoding, URLs, result formatting, and web_fetch/web_search over loopback.
import asyncio
import os

import esp32
from support import raises, run

from mimi.settings import Config
from mimi.tools import fetch, search, weather, web
from mimi.tools.html_text import HtmlText, decode_entities, strip_tags
from mimi.tools.http_text import Decoder, media_type, query, quote, resolve
from mimi.tools.tool_check import check_tool
from mimi.tools.registry import ToolError

PAGE = """<!DOCTYPE html><html><head><title>Mimi &amp; Friends</title>
<style>body { color: red; }</style><script>var x = "<p>SCRIPT</p>"; if (a < b) {}</script></head>
<body><h1>Hello&nbsp;world</h1><p>Caf&eacute; &#233; &#x2019; &bogus; AT&T a &lt; b</p>
<!-- <p>COMMENT</p> --><ul><li>one</li><li><a href="/x">two</a></li></ul>
<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>
<pre>  keep
    this</pre><div>end</div></body></html>"""

EXPECTED = ("Hello world\n\nCaf\u00e9 \u00e9 \u2019 &bogus; AT&T a < b\n\n- one\n- two\n\na | b\nc | d\n\n"
            "  keep\n    this\n\nend")


def _reduce(pieces, limit=7500):
    reducer = HtmlText(limit)
    for piece in pieces:
        reducer.feed(piece)
    reducer.close()
    return reducer


def test_html_becomes_readable_text_without_scripts_styles_or_comments():
    reducer = _reduce([PAGE])
    assert reducer.title == "Mimi & Friends"
    assert reducer.text() == EXPECTED
    assert not reducer.full


def test_html_split_anywhere_gives_the_same_text():
    # Tags, entities, comments and the script's end tag cut between pieces must not change the result.
    one_by_one = _reduce(list(PAGE))
    assert one_by_one.text() == EXPECTED and one_by_one.title == "Mimi & Friends"
    for size in (2, 3, 7, 64):
        pieces = [PAGE[i : i + size] for i in range(0, len(PAGE), size)]
        assert _reduce(pieces).text() == EXPECTED


def test_reducer_stops_at_its_limit_and_says_so():
    reducer = _reduce(["<p>" + "word " * 1000 + "</p>"], limit=100)
    assert reducer.full
    assert len(reducer.text()) == 100 and reducer.text().startswith("word word")


def test_huge_tags_and_unclosed_scripts_are_not_held_in_memory():
    data_uri = '<img src="data:image/png;base64,' + "A" * 5000 + '">'
    assert _reduce(["<p>before</p>", data_uri[:2000], data_uri[2000:], "<p>after</p>"]).text() == "before\n\nafter"
    reducer = HtmlText()
    reducer.feed("<p>seen</p><script>")
    for _ in range(200):
        reducer.feed("var filler = 1; " * 20)
    assert len(reducer._pending) < 16  # only a possible '</script' start is kept
    reducer.feed("</SCRIPT><p>after</p>")
    assert reducer.text() == "seen\n\nafter"


def test_entities():
    assert decode_entities("a &amp; b &lt;c&gt; &quot;d&quot; &#39;e&#39;") == "a & b <c> \"d\" 'e'"
    assert decode_entities("&#x1F600; &#128512; &euro;&hellip;") == "\U0001F600 \U0001F600 \u20ac\u2026"
    assert decode_entities("&unknown; &#xZZ; & alone &#0;") == "&unknown; &#xZZ; & alone &#0;"
    assert strip_tags("The <strong>Brave</strong> browser &amp; AT&T") == "The Brave browser & AT&T"


def test_decoder_keeps_characters_split_between_pieces_and_marks_broken_bytes():
    data = "Gr\u00fc\u00dfe \u2014 \U0001F600!".encode()
    for cut in range(1, len(data)):
        decoder = Decoder("utf-8")
        assert decoder.decode(data[:cut]) + decoder.decode(data[cut:], True) == "Gr\u00fc\u00dfe \u2014 \U0001F600!"
    assert Decoder("").decode(b"ok \xff\xfe bad \xe2\x82", True) == "ok \ufffd\ufffd bad \ufffd\ufffd"
    assert Decoder("iso-8859-1").decode(b"Z\xfcrich \xa9") == "Z\u00fcrich \u00a9"


def test_urls():
    assert quote("caf\u00e9 & tea/2?") == "caf%C3%A9%20%26%20tea%2F2%3F"
    assert query((("q", "a b"), ("count", 5))) == "q=a%20b&count=5"
    base = "https://example.com/docs/page.html?x=1"
    assert resolve(base, "/top") == "https://example.com/top"
    assert resolve(base, "other.html") == "https://example.com/docs/other.html"
    assert resolve(base, "?y=2") == "https://example.com/docs/page.html?y=2"
    assert resolve(base, "//cdn.example.org/a") == "https://cdn.example.org/a"
    assert resolve(base, "http://elsewhere/") == "http://elsewhere/"
    assert resolve("http://h:8080", "x") == "http://h:8080/x"
    assert resolve(base, "mailto:a@b.c") == "mailto:a@b.c"  # left for the caller to refuse
    assert media_type("Text/HTML; Charset=\"ISO-8859-1\"") == ("text/html", "iso-8859-1")
    assert media_type("") == ("", "")
    assert fetch.is_text("text/plain") and fetch.is_text("application/json") and fetch.is_text("application/rss+xml")
    assert not fetch.is_text("image/png") and not fetch.is_text("application/octet-stream")


# ---- web_fetch against a loopback server (asyncio.start_server runs on both runtimes) ----

def _port():
    return 21000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


def _response(status, headers, body):
    head = "HTTP/1.1 {}\r\n".format(status)
    for name in headers:
        head += "{}: {}\r\n".format(name, headers[name])
    return [head.encode() + b"\r\n", body]


async def _site(routes, port, seen):
    """routes: path -> list of bytes pieces, or an async function(writer) that writes the reply."""

    async def handle(reader, writer):
        head = b""
        while b"\r\n\r\n" not in head:
            data = await reader.read(256)
            if not data:
                break
            head += data
        seen.append(head.decode())
        path = head.split(b" ")[1].decode() if b" " in head else "/"
        route = routes.get(path) or _response("404 Not Found", {"Content-Length": 0}, b"")
        try:
            if callable(route):
                await route(writer)
            else:
                for piece in route:
                    writer.write(piece)
                    await writer.drain()
        except OSError:
            pass  # the client hung up
        writer.close()
        await writer.wait_closed()

    return await asyncio.start_server(handle, "127.0.0.1", port)


def _with_site(routes, fn):
    seen = []

    async def main():
        port = _port()
        server = await _site(routes, port, seen)
        try:
            return await fn("http://127.0.0.1:{}".format(port))
        finally:
            server.close()
            await server.wait_closed()

    return run(main()), seen


async def _fetch_error(url):
    try:
        await fetch.run({"url": url})
    except ToolError as exc:
        return str(exc)
    return "no error"


def test_fetch_follows_redirects_and_reduces_html():
    html = b"<html><head><title>Hi</title><script>NOPE</script></head><body><p>Hello &amp; bye</p></body></html>"
    routes = {
        "/a": _response("301 Moved", {"Location": "/b", "Content-Length": 0}, b""),
        "/b": _response("302 Found", {"Location": "c?x=1", "Content-Length": 0}, b""),
        "/c?x=1": _response("200 OK", {"Content-Type": "text/html; charset=utf-8", "Content-Length": len(html)}, html),
    }
    out, seen = _with_site(routes, lambda base: fetch.run({"url": base + "/a#section"}))
    assert out.splitlines()[1:] == ["Title: Hi", "", "Hello & bye"]
    assert out.startswith("URL: http://127.0.0.1:") and out.splitlines()[0].endswith("/c?x=1")
    assert [h.split(" ")[1] for h in seen] == ["/a", "/b", "/c?x=1"]
    assert "Accept-Encoding: identity" in seen[0] and "User-Agent: MimiClaw-Py/" in seen[0]


def test_fetch_gives_up_after_three_redirects():
    loop = _response("302 Found", {"Location": "/loop", "Content-Length": 0}, b"")
    text, seen = _with_site({"/loop": loop}, lambda base: _fetch_error(base + "/loop"))
    assert "too many redirects" in text
    assert len(seen) == 4  # the first request and three redirects


def test_fetch_refuses_binary_content():
    png = _response("200 OK", {"Content-Type": "image/png", "Content-Length": 8}, b"\x89PNG\r\n\x1a\n")
    untyped = _response("200 OK", {"Content-Length": 12}, b"\x00\x01\x02\x03binary\x00\x00")
    text, _ = _with_site({"/i.png": png}, lambda base: _fetch_error(base + "/i.png"))
    assert "is image/png, not text" in text
    text, _ = _with_site({"/x": untyped}, lambda base: _fetch_error(base + "/x"))
    assert "binary data, not text" in text


def test_fetch_reports_http_errors_and_bad_urls():
    text, _ = _with_site({}, lambda base: _fetch_error(base + "/nothing"))
    assert text.endswith("/nothing answered HTTP 404 Not Found")
    assert "needs a full http:// or https:// URL" in run(_fetch_error("ftp://example.com/file"))
    assert "could not fetch" in run(_fetch_error("http://127.0.0.1:1/"))


def test_fetch_reads_chunked_text_with_a_split_character():
    body = [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"4\r\nGr\xc3\xbc\r\n", b"5\r\n\xc3\x9fe!\n\r\n", b"0\r\n\r\n"]
    out, _ = _with_site({"/t": body}, lambda base: fetch.run({"url": base + "/t"}))
    assert out.splitlines()[2:] == ["Gr\u00fc\u00dfe!"]


def test_fetch_stops_reading_an_endless_page():
    sent = [0]

    async def endless(writer):  # a close-delimited body that never ends on its own
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>start</p>")
        piece = b"<div><span></span></div>\n" * 40
        while sent[0] < 8 * 1024 * 1024:
            writer.write(piece)
            await writer.drain()
            sent[0] += len(piece)

    out, _ = _with_site({"/huge": endless}, lambda base: fetch.run({"url": base + "/huge"}))
    assert out.splitlines()[2] == "start"
    assert "[cut: only the first 64 KB of the page were read]" in out
    assert sent[0] < 8 * 1024 * 1024


def test_fetch_honours_max_chars():
    text = b"word " * 2000
    route = _response("200 OK", {"Content-Type": "text/plain", "Content-Length": len(text)}, text)
    out, _ = _with_site({"/t": route}, lambda base: fetch.run({"url": base + "/t", "max_chars": 300}))
    assert out.endswith("[cut at 300 characters of text]")
    assert len(out.splitlines()[2]) <= 300


# ---- web_search ----

class _App:
    def __init__(self):
        from mimi.channels.commands import Commands

        esp32.set_flash_dir(None)
        self.config = Config()
        self.console = type("Console", (), {})()
        self.console.commands = Commands(self, self.console)


def _config():
    esp32.set_flash_dir(None)
    return Config()


def test_the_three_tools_are_valid_and_load_their_code_only_when_called():
    app = _App()
    tools = [tool(app) for tool in web.TOOLS]
    assert [t.name for t in tools] == ["web_fetch", "web_search", "get_weather"]
    assert [check_tool(t) for t in tools] == [None, None, None]
    app.console.commands.add_lines(web.COMMANDS)  # as at boot (builtin_defs.COMMANDS)
    handler, usage, fewest, most, _ = app.console.commands.entry("set_search_key")
    assert (usage, fewest, most) == ("set_search_key <key> [brave|tavily]", 1, 2)
    run(handler("tvly-from-the-console"))
    assert app.config.get("web_config", "search_provider") == "tavily"
    app.config.set("web_config", "search_api", "http://127.0.0.1:1/search")  # nobody listens there
    text = str(raises(ToolError, run, tools[1].run({"query": "x"})))
    assert text.startswith("Tavily is unreachable: ") and "tvly-from-the-console" not in text


def test_search_without_a_key_says_how_to_set_one():
    text = str(raises(ToolError, run, search.run({"query": "weather"}, _config())))
    assert text == "web search is not configured: set_search_key <key>"


def test_set_search_key_picks_tavily_for_tvly_keys_and_refuses_unknown_providers():
    cfg = _config()
    web.set_search_key(cfg, "tvly-abc")
    assert cfg.get("web_config", "search_provider") == "tavily"
    web.set_search_key(cfg, "BSA-key", "brave")
    assert cfg.get("web_config", "search_provider") == "brave"
    assert cfg.get("web_config", "search_key") == "BSA-key"
    raises(ValueError, web.set_search_key, cfg, "k", "google")


def test_brave_search_sends_the_key_header_and_formats_results():
    cfg = _config()
    cfg.set("web_config", "search_key", "BSA-secret-key")
    answer = ('{"type":"search","web":{"type":"search","results":['
              '{"title":"The <strong>Tiny</strong> Chip","url":"https://a.example/","description":'
              '"A &quot;tiny&quot; <strong>chip</strong> &amp; more"},{"title":"No link"},'
              '{"title":"Second","url":"https://b.example/x","description":""}]}}').encode()
    route = _response("200 OK", {"Content-Type": "application/json", "Content-Length": len(answer)}, answer)

    async def go(base):
        cfg.set("web_config", "search_api", base + "/res/v1/web/search")
        return await search.run({"query": "tiny chip & co", "count": 50}, cfg)

    out, seen = _with_site({"/res/v1/web/search?q=tiny%20chip%20%26%20co&count=10&result_filter=web": route}, go)
    assert "X-Subscription-Token: BSA-secret-key" in seen[0]
    assert out == ("Results for 'tiny chip & co' (Brave Search):\n"
                   "1. The Tiny Chip\n   https://a.example/\n   A \"tiny\" chip & more\n"
                   "2. Second\n   https://b.example/x")


async def _search_error(data, cfg):
    try:
        await search.run(data, cfg)
    except ToolError as exc:
        return str(exc)
    return "no error"


def test_search_errors_are_clear_and_never_show_the_key():
    cfg = _config()
    key = "tvly-the-secret-key"
    web.set_search_key(cfg, key)
    refusal = b'{"detail":{"error":"Unauthorized: missing or invalid API key tvly-the-secret-key."}}'
    route = _response("401 Unauthorized", {"Content-Type": "application/json", "Content-Length": len(refusal)},
                      refusal)

    async def go(base):
        cfg.set("web_config", "search_api", base + "/search")
        return await _search_error({"query": "x"}, cfg)

    text, seen = _with_site({"/search": route}, go)
    assert text.startswith("Tavily refused the search key (HTTP 401")
    assert "set_search_key" in text and key not in text
    assert "Authorization: Bearer " + key in seen[0] and seen[0].startswith("POST /search ")


def test_search_failure_texts():
    brave_token = {"type": "ErrorResponse", "error": {"status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID",
                                                      "detail": "The provided subscription token is invalid."}}
    assert "refused the search key" in search.failure("brave", 422, brave_token, "")
    validation = {"error": {"code": "VALIDATION", "detail": "Unable to validate request parameter(s)"}}
    assert search.failure("brave", 422, validation, "") == \
        "Brave Search search failed (HTTP 422: Unable to validate request parameter(s))"
    assert "rate limit reached" in search.failure("brave", 429, {"error": {"detail": "slow down"}}, "")
    assert "plan limit" in search.failure("tavily", 432, {"detail": {"error": "over"}}, "")
    bad_gateway = search.failure("tavily", 502, None, "<html>Bad   gateway</html>")
    assert bad_gateway.endswith("(HTTP 502: <html>Bad gateway</html>)")
    assert search.format_results("q", "tavily", []) == "No results for 'q' (Tavily)."


# ---- get_weather ----

FORECAST = {
    "latitude": 52.52, "longitude": 13.419998, "timezone": "Europe/Berlin",
    "current_units": {"time": "iso8601", "interval": "seconds", "temperature_2m": "\u00b0C",
                      "apparent_temperature": "\u00b0C", "weather_code": "wmo code", "wind_speed_10m": "km/h",
                      "relative_humidity_2m": "%", "precipitation": "mm"},
    "current": {"time": "2025-05-01T14:15", "interval": 900, "temperature_2m": 18.3, "apparent_temperature": 17.0,
                "weather_code": 2, "wind_speed_10m": 11.2, "relative_humidity_2m": 45, "precipitation": 0.2},
    "daily_units": {"time": "iso8601", "weather_code": "wmo code", "temperature_2m_max": "\u00b0C",
                    "temperature_2m_min": "\u00b0C", "precipitation_probability_max": "%"},
    "daily": {"time": ["2025-05-01", "2025-05-02"], "weather_code": [2, 95], "temperature_2m_max": [19.4, 21.0],
              "temperature_2m_min": [9.1, 12.5], "precipitation_probability_max": [10, 80]},
}


def test_weather_is_a_few_lines_in_words():
    assert weather.format_weather("Berlin, Germany (52.52, 13.41)", FORECAST).splitlines() == [
        "Weather for Berlin, Germany (52.52, 13.41), local time 2025-05-01T14:15 (Europe/Berlin):",
        "Now: 18.3 \u00b0C (feels like 17 \u00b0C), partly cloudy, wind 11.2 km/h, humidity 45%, "
        "precipitation 0.2 mm",
        "2025-05-01: partly cloudy, 9.1 to 19.4 \u00b0C, 10% chance of precipitation",
        "2025-05-02: thunderstorm, 12.5 to 21 \u00b0C, 80% chance of precipitation",
    ]
    assert weather.describe_code(0) == "clear sky" and weather.describe_code(42) == "weather code 42"


def test_place_choice_uses_the_country_or_region_after_the_comma():
    paris_fr = {"name": "Paris", "country": "France", "admin1": "\u00cele-de-France", "country_code": "FR"}
    paris_tx = {"name": "Paris", "country": "United States", "admin1": "Texas", "country_code": "US"}
    assert weather.pick_place([paris_fr, paris_tx], " Texas") is paris_tx
    assert weather.pick_place([paris_fr, paris_tx], "us") is paris_tx
    assert weather.pick_place([paris_fr, paris_tx], "") is paris_fr
    assert weather.pick_place([paris_fr, paris_tx], "Mars") is paris_fr
    assert weather.place_label(paris_tx) == "Paris, Texas, United States"


def test_weather_input_errors():
    cfg = _config()
    assert "needs a place name" in str(raises(ToolError, run, weather.run({}, cfg)))
    assert "needs a place name" in str(raises(ToolError, run, weather.run({"latitude": 1.0}, cfg)))
    text = str(raises(ToolError, run, weather.run({"latitude": 91, "longitude": 0}, cfg)))
    assert text == "latitude must be a number from -90 to 90"
