# A fake outside web for the web tools: pages (redirects, huge, binary, chunked) and the search/weather APIs.
import argparse
import asyncio
import json
import signal
import threading
import time
from collections import deque

from aiohttp import web

from host_sim import web_apis
from host_sim.background_server import BackgroundServer

BRAVE_PATH = "/res/v1/web/search"
TAVILY_PATH = "/search"
FORECAST_PATH = "/v1/forecast"
GEOCODE_PATH = "/v1/search"
HUGE_BYTES = 32 * 1024 * 1024  # the endless page stops here (a client that reads it all is broken)

ARTICLE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>The Tiny Assistant &ndash; Notes</title>
<style>body { font-family: serif; } .ad { display: none; }</style>
<script>window.tracking = "<p>SECRET-SCRIPT-TEXT</p>"; if (a < b) { run(); }</script>
<link rel="stylesheet" href="/site.css"></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Mimi&nbsp;lives on a chip</h1>
<p>An ESP32-S3 runs the assistant: 512&nbsp;KB of SRAM &amp; 8&nbsp;MB of PSRAM.
   Caf&eacute; prices rose 5&#37; &mdash; &#x201C;quoted&#x201D; &copy; 2025.</p>
<!-- <p>COMMENTED-OUT TEXT</p> -->
<ul><li>Talks to <a href="https://www.anthropic.com">Claude</a></li><li>Remembers things</li></ul>
<noscript><p>NOSCRIPT-TEXT</p></noscript>
<table><tr><th>Part</th><th>Price</th></tr><tr><td>Board</td><td>&euro;12</td></tr></table>
<p>The end.</p>
</body></html>
"""
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15"
       b"\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa7\x35\x81\x84\x00\x00\x00\x00"
       b"IEND\xaeB`\x82")
CHUNKS = ("Line one of a chunked text.\n".encode(), "Gr\u00fc".encode()[:3], "\u00fc\u00dfe \u2014 ".encode()[1:],
          "split in the middle of characters.\n".encode())
LATIN1 = "<html><body><p>Z\u00fcrich, na\u00efve, \u00a9 \u00bd</p></body></html>".encode("latin-1")


class FakeWeb(BackgroundServer):
    """Pages and APIs on one local port. `requests` records what came in; `fail_search(status)` scripts faults."""

    name = "fake-web"

    def __init__(self, brave_key="BSA-test-brave-key-0123456789", tavily_key="tvly-test-key-0123456789",
                 ssl_context=None, host="127.0.0.1", port=0):
        super().__init__(ssl_context, host, port)
        self.brave_key, self.tavily_key = brave_key, tavily_key
        self._lock = threading.Lock()
        self._requests = []
        self._search_faults = deque()
        self._pages = {}
        self.huge_sent = 0  # bytes of /huge.html written before the client hung up

    # ---- the test's side (thread-safe) ----

    @property
    def requests(self):
        with self._lock:
            return list(self._requests)

    def requests_to(self, path):
        return [r for r in self.requests if r["path"] == path]

    def reset(self):
        with self._lock:
            self._requests.clear()
            self._search_faults.clear()
            self._pages.clear()
            self.huge_sent = 0

    def page(self, path, body, content_type="text/html; charset=utf-8", status=200, headers=None):
        """Serve `body` (str or bytes) at `path` from now on."""
        data = body.encode() if isinstance(body, str) else body
        with self._lock:
            self._pages[path] = (status, content_type, data, dict(headers or {}))

    def fail_search(self, status, times=1):
        """The next `times` search requests (Brave or Tavily) answer with that provider's error for `status`."""
        with self._lock:
            self._search_faults.extend([status] * times)

    def wait_requests(self, path, n, timeout=10.0):
        deadline = time.monotonic() + timeout
        while len(self.requests_to(path)) < n:
            if time.monotonic() > deadline:
                raise AssertionError("fake web: {} requests to {} expected, got {}".format(
                    n, path, len(self.requests_to(path))))
            time.sleep(0.02)
        return self.requests_to(path)

    # ---- the server's side ----

    async def _handle(self, request):
        raw = await request.read()
        record = {"method": request.method, "path": request.path, "query": dict(request.query),
                  "headers": {k.lower(): v for k, v in request.headers.items()}, "body": _parsed(raw),
                  "time": time.time()}
        with self._lock:
            self._requests.append(record)
            custom = self._pages.get(request.path)
        if custom is not None:
            status, content_type, data, headers = custom
            return web.Response(status=status, body=data, headers=dict(headers, **{"Content-Type": content_type}))
        try:
            return await self._route(request, record)
        except web_apis.ApiFailure as failure:
            return web.json_response(failure.body, status=failure.status, headers=failure.headers)

    async def _route(self, request, record):
        path = request.path
        if path == BRAVE_PATH and request.method == "GET":
            self._fault("brave")
            body = web_apis.brave_search(record["query"], request.headers.get("X-Subscription-Token"),
                                         self.brave_key)
            return web.json_response(body, headers=web_apis.brave_rate_headers(1999))
        if path == TAVILY_PATH and request.method == "POST":
            self._fault("tavily")
            auth = request.headers.get("Authorization", "")
            bearer = auth[7:].strip() if auth.startswith("Bearer ") else None
            return web.json_response(web_apis.tavily_search(record["body"], bearer, self.tavily_key))
        if path == FORECAST_PATH:
            return web.json_response(web_apis.forecast(record["query"]))
        if path == GEOCODE_PATH:
            return web.json_response(web_apis.geocode(record["query"]))
        return await self._page(request)

    def _fault(self, provider):
        with self._lock:
            status = self._search_faults.popleft() if self._search_faults else None
        if status is None:
            return
        if provider == "brave":
            code, detail = web_apis.BRAVE_FAULTS.get(status, ("ERROR", "Error"))
            headers = web_apis.brave_rate_headers(0) if status == 429 else None
            failure = web_apis.brave_error(status, code, detail)
            failure.headers = headers or {}
            raise failure
        raise web_apis.tavily_error(status, web_apis.TAVILY_FAULTS.get(status, "Error"))

    async def _page(self, request):
        path = request.path
        if path in ("/", "/page.html"):
            return web.Response(text=ARTICLE, content_type="text/html", charset="utf-8")
        if path == "/redirect":
            raise web.HTTPFound("/page.html")
        if path.startswith("/redirect/"):  # /redirect/3 -> /redirect/2 -> /redirect/1 -> /page.html
            hops = int(path.rsplit("/", 1)[1])
            raise web.HTTPFound("{}".format(hops - 1) if hops > 1 else "/page.html")  # relative, then absolute
        if path == "/loop":
            raise web.HTTPMovedPermanently("/loop")
        if path == "/elsewhere":
            raise web.HTTPFound("ftp://files.example.com/x")
        if path == "/image.png":
            return web.Response(body=PNG, content_type="image/png")
        if path == "/untyped.bin":  # no Content-Type at all, binary inside
            response = web.Response(body=b"\x00\x01\x02binary\x00" * 64)
            response.headers.popall("Content-Type", None)
            return response
        if path == "/latin1.html":
            return web.Response(body=LATIN1, headers={"Content-Type": "text/html; charset=ISO-8859-1"})
        if path == "/data.json":
            return web.json_response({"name": "mimi", "version": 1, "tags": ["esp32", "claude"]})
        if path == "/chunked.txt":
            return await self._chunked(request)
        if path in ("/huge.html", "/huge.txt"):
            return await self._huge(request)
        if path == "/gzip.txt":
            return web.Response(body=b"\x1f\x8b\x08\x00", headers={"Content-Type": "text/plain",
                                                                 "Content-Encoding": "gzip"})
        return web.Response(status=404, text="<html><body><h1>404 Not Found</h1></body></html>",
                            content_type="text/html")

    async def _chunked(self, request):
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        for piece in CHUNKS:
            await response.write(piece)
            await asyncio.sleep(0.02)
        await response.write_eof()
        return response

    async def _huge(self, request):
        """An endless (32 MB) chunked page or text: only a client that stops reading gets an answer."""
        kind = "text/plain" if request.path.endswith(".txt") else "text/html"
        response = web.StreamResponse(headers={"Content-Type": kind + "; charset=utf-8"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        if request.path.endswith(".txt"):  # text all the way: the text cap stops the reader
            head, piece = b"The beginning of a huge text.\n", b"filler words " * 630 + b"\n"
        else:  # mostly markup: the raw byte cap stops the reader
            head = b"<html><head><title>Huge</title></head><body><p>The beginning of a huge page.</p>"
            piece = b'<div class="row"><span class="cell"></span></div>\n' * 160 + b"<p>filler</p>\n"
        sent = 0
        try:
            await response.write(head)
            while sent < HUGE_BYTES:
                await response.write(piece)
                sent += len(piece)
                with self._lock:
                    self.huge_sent = sent
            await response.write_eof()
        except (ConnectionError, asyncio.CancelledError, RuntimeError):
            pass  # the client hung up: that is the point
        return response


def _parsed(raw):
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return raw.decode("utf-8", "replace")


def main():
    parser = argparse.ArgumentParser(description="Fake outside web (pages, Brave, Tavily, Open-Meteo)")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--brave-key", default="BSA-test-brave-key-0123456789")
    parser.add_argument("--tavily-key", default="tvly-test-key-0123456789")
    args = parser.parse_args()
    server = FakeWeb(args.brave_key, args.tavily_key, port=args.port)
    print("fake web on", server.start(), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
