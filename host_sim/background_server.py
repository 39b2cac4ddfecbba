# An aiohttp server run from a background thread with its own event loop (start/stop/with).
import asyncio
import signal
import sys
import threading
import time

from aiohttp import web

_SHUTDOWN_SECONDS = 1.0
_DRAIN_POLLS = 200  # 5 ms apart: what was written has a second to leave before the drop


async def drop_connection(request):
    """Cut the TCP connection once what was written has left (a fault: no terminating chunk)."""
    transport = request.transport
    for _ in range(_DRAIN_POLLS):
        if transport is None or transport.get_write_buffer_size() == 0:
            break
        await asyncio.sleep(0.005)
    if transport is not None:
        transport.abort()


class BackgroundServer:
    """Subclasses give `_handle(request)`; `_stopping` is set when stop() begins."""

    name = "background-server"

    def __init__(self, ssl_context=None, host="127.0.0.1", port=0):
        self.ssl_context = ssl_context
        self.host, self.port = host, port
        self.url = None
        self._thread = self._loop = self._runner = self._stopping = None

    def wait_for(self, predicate, timeout=5.0):
        """Poll predicate() until truthy (from the test's thread); returns its last value (falsy on timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.01)

    def start(self):
        """Serve from a background thread with its own event loop; returns the base URL."""
        if self._thread is not None:
            raise RuntimeError("{} is already running".format(self.name))
        ready, failure = threading.Event(), []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(ready, failure),
                                        name=self.name, daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = self._loop = None
            raise failure[0]
        return self.url

    def _run(self, ready, failure):
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._open())
        except Exception as exc:  # e.g. the port is taken: report it to start()
            failure.append(exc)
            ready.set()
            self._loop.close()
            return
        ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._close())
        self._loop.close()

    def _application(self):
        """Hook: the aiohttp Application to serve (subclasses may set limits)."""
        return web.Application()

    async def _opened(self):
        """Hook: runs on the server's loop before it accepts connections."""

    async def _closing(self):
        """Hook: runs on the server's loop once stop() began, before connections close."""

    async def _open(self):
        self._stopping = asyncio.Event()
        await self._opened()
        app = self._application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        port = self._runner.addresses[0][1]
        if self.ssl_context is not None:
            self.url = "https://localhost:{}".format(port)
        else:
            host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
            self.url = "http://{}:{}".format(host, port)

    async def _close(self):
        self._stopping.set()
        await self._closing()
        await self._runner.cleanup()

    async def _sleep(self, seconds):
        """Sleep, cut short by stop(); False when the server is stopping."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
            return False
        except asyncio.TimeoutError:
            return True

    def stop(self):
        """Stop serving. Safe to call twice."""
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = self._loop = None

    def serve_forever(self, what):
        """Command-line mode: announce the URL (flushed), serve until SIGTERM or Ctrl-C."""
        print("{} on {}".format(what, self.start()), flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    async def _handle(self, request):
        raise NotImplementedError
