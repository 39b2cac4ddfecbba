# microdot's server with a deadline on reading each request, its head read bounded before anyone is
# authenticated, and Nagle's algorithm off per connection.
import asyncio

from microdot import Microdot, Request, Response
from microdot.microdot import MUTED_SOCKET_ERRORS, NoCaseDict

from mimi import platform
from mimi.platform import const

REQUEST_TIMEOUT_S = const(10)  # a client that has not sent its whole request (handshake) by then is hung up on
# Bodies up to this are let through to their route: /upload streams photos and files to flash (the media
# limits top out at 5 MB); every other route reads at most Request.max_body_length (16 KB).
Request.max_content_length = 5 * 1024 * 1024 + 4096
_HEADERS_MAX = const(48)  # header lines of one request; past it: 431 and the connection closed
_HEAD_MAX = const(8 * 1024)  # bytes of the request line and headers together; past it: 431
_KEPT_MAX = const(2048)  # bytes of the kept headers' values together; past it: 431
_DRAIN_MS = const(1000)  # after a 431: the rest of what the client sends read and dropped this long at most
_DRAIN_IDLE_S = 0.1
# The headers the gateway reads (the routes, the WebSocket handshake, MCP); the others a client sends (cookies
# of other sites on the same name, a browser's hints) are counted and dropped, so they cost no heap.
_KEPT = ("host", "origin", "authorization", "content-length", "content-type", "upgrade", "connection",
         "sec-websocket-key", "sec-websocket-version", "accept", "if-none-match", "mcp-protocol-version",
         "mcp-session-id", "mcp-method", "mcp-name")


class HeadTooLarge(ValueError):
    """The request's head has more header lines or bytes than the gateway reads: answered 431."""


class BoundedRequest(Request):
    """microdot's Request, its head (request line and headers) read through one fixed buffer of a line's size:
    at most 48 header lines and 8 KB, only the headers the gateway uses kept, before any route (or token check)
    runs. A client that sends 1,500 headers holds no more than one line's buffer."""

    @staticmethod
    async def create(app, client_reader, client_writer, client_addr, scheme=None):
        head = await read_head(client_reader)
        if head is None:
            return None
        method, url, version, headers, rest = head
        length = int(headers.get("Content-Length") or 0)
        body, stream = b"", client_reader
        if 0 < length <= Request.max_body_length:  # read whole here, as microdot does
            body = rest[:length]
            if len(body) < length:
                body += await client_reader.readexactly(length - len(body))
            stream = None
        elif rest:
            stream = Rest(rest, client_reader)  # bytes that came with the head: the body's (or frames') start
        return BoundedRequest(app, client_addr, method, url, version, headers, body=body, stream=stream,
                              sock=(stream or client_reader, client_writer), scheme=scheme)


async def read_head(reader):
    """(method, url, HTTP version, headers, bytes read past the head) of the next request, or None when the
    connection closes first; HeadTooLarge past the caps, ValueError for a line too long or malformed."""
    buf = bytearray(Request.max_readline)
    view = memoryview(buf)
    filled = used = count = kept = 0
    first, headers = None, NoCaseDict()
    while True:
        end = buf.find(b"\n", 0, filled)
        if end < 0:
            if filled == len(buf):
                raise ValueError("line too long")
            if used + filled > _HEAD_MAX:
                raise HeadTooLarge()
            got = await _read_into(reader, view[filled:])
            if not got:
                if first is None and not filled:
                    return None
                raise ValueError("the connection closed inside the request's head")
            filled += got
            continue
        line = bytes(view[:end]).decode().strip()
        used += end + 1
        view[:filled - end - 1] = view[end + 1:filled]
        filled -= end + 1
        if used > _HEAD_MAX:
            raise HeadTooLarge()
        if first is None:
            if not line:
                return None
            first = line.split()
            if len(first) != 3:
                raise ValueError("a request line of {} words".format(len(first)))
            continue
        if not line:  # the blank line: the head is complete
            method, url, version = first
            return method, url, version.split("/", 1)[1], headers, bytes(view[:filled])
        count += 1
        if count > _HEADERS_MAX:
            raise HeadTooLarge()
        name, colon, value = line.partition(":")
        if not colon:
            raise ValueError("a header line without a colon")
        name = name.strip()
        if name.lower() in _KEPT:
            value = value.strip()
            kept += len(value)
            if kept > _KEPT_MAX:
                raise HeadTooLarge()
            headers[name] = value


async def _read_into(reader, view):
    if hasattr(reader, "readinto"):  # MicroPython's stream: into the buffer itself
        return await reader.readinto(view)
    data = await reader.read(len(view))  # CPython's StreamReader
    view[:len(data)] = data
    return len(data)


class Rest:
    """A reader that gives back first the bytes read past a request's head (its body's start, or WebSocket
    frames a client sent at once), then the connection's own."""

    def __init__(self, rest, reader):
        self.rest = rest
        self.reader = reader

    def _take(self, n):
        data, self.rest = self.rest[:n], self.rest[n:]
        return data

    async def read(self, n=-1):
        if self.rest:
            return self._take(len(self.rest) if n < 0 else n)
        return await self.reader.read(n)

    async def readexactly(self, n):
        data = self._take(n)
        if len(data) < n:
            data += await self.reader.readexactly(n - len(data))
        return data

    async def readinto(self, buf):
        if self.rest:
            data = self._take(len(buf))
            buf[:len(data)] = data
            return len(data)
        return await _read_into(self.reader, buf)

    async def readline(self):
        at = self.rest.find(b"\n")
        if at >= 0:
            return self._take(at + 1)
        return self._take(len(self.rest)) + await self.reader.readline()


class Web(Microdot):
    """microdot with a deadline on reading the request, its head bounded, and Nagle's algorithm off per
    connection. request_class makes the request: the hook a subclass (or a test) changes."""

    request_class = BoundedRequest

    async def serve(self, reader, writer):
        """A connection the gateway's listener accepted (gateway/server.py), served as microdot's
        start_server serves one: CPython's StreamWriter gets the awrite and aclose microdot uses."""
        if not hasattr(writer, "awrite"):
            async def awrite(data):
                writer.write(data)
                await writer.drain()

            async def aclose():
                writer.close()
                await writer.wait_closed()

            writer.awrite, writer.aclose = awrite, aclose
        await self.handle_request(reader, writer)

    async def handle_request(self, reader, writer):
        # microdot's handle_request, but a silent or half-sent request no longer holds its
        # connection (and its memory) open for ever; other clients are served meanwhile.
        platform.tcp_nodelay(writer)
        request = None
        try:
            request = await asyncio.wait_for(
                self.request_class.create(self, reader, writer, writer.get_extra_info("peername")),
                REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError:
            platform.log("gateway: a client sent no complete request within {} s; hung up".format(
                REQUEST_TIMEOUT_S))
            await _close_quietly(writer)
            return
        except HeadTooLarge:  # before any route: nothing kept, the client told, the connection closed
            platform.log("gateway: answered 431 to a request of over {} header lines or {} bytes".format(
                _HEADERS_MAX, _HEAD_MAX))
            await _too_large(reader, writer)
            return
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                platform.print_exception(exc)
        except Exception as exc:  # a malformed request line or header: answered with 400 below
            platform.log("gateway: answered 400 to a malformed request ({})".format(_malformed(exc)))
        response = await self.dispatch_request(request)
        try:
            if response != Response.already_handled:
                await response.write(writer)
            await writer.aclose()
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                raise


async def refuse(request, status, text, header):
    """Answer with a short plain-text error, written by hand: WebSocket clients want HTTP/1.1
    and microdot answers HTTP/1.0."""
    body = (text + "\n").encode()
    head = "HTTP/1.1 {}\r\n{}\r\nContent-Type: text/plain; charset=utf-8\r\n" \
        "Content-Length: {}\r\nConnection: close\r\n\r\n".format(status, header, len(body))
    await request.sock[1].awrite(head.encode() + body)
    return Response.already_handled


def _malformed(exc):
    """What was wrong with a request microdot could not read, in a few words."""
    if isinstance(exc, UnicodeError):  # before ValueError: a subclass of it on both runtimes
        return "bytes that are not UTF-8"
    if "too long" in str(exc):
        return "a request line or header over {} bytes".format(Request.max_readline)
    return "{}: {}".format(type(exc).__name__, str(exc)[:60])


async def _too_large(reader, writer):
    body = b"request header fields too large\n"
    try:
        await writer.awrite(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
                            b"Content-Length: 32\r\nConnection: close\r\n\r\n" + body)
        # what the client still sends is read and dropped a while, so that it hears the 431 (a close with
        # unread data would reset the connection)
        deadline = platform.ticks_add(platform.ticks_ms(), _DRAIN_MS)
        while platform.ticks_diff(deadline, platform.ticks_ms()) > 0:
            if not await asyncio.wait_for(reader.read(256), _DRAIN_IDLE_S):
                break
    except (asyncio.TimeoutError, OSError, EOFError):
        pass
    await _close_quietly(writer)


async def _close_quietly(writer):
    try:
        await writer.aclose()
    except Exception:  # the peer is gone already
        pass
