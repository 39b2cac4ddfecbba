# The gateway's microdot: each request's head read first, within a deadline and bounded before anyone is
# authenticated (only the headers the gateway uses kept), screened on that head (its route, name, page and token:
# no byte of a body is read before), then dispatched by microdot's own dispatch_request; a connection closed only
# once the client has stopped sending (a lingering close), Nagle's algorithm off per connection.
import asyncio

from microdot import Microdot, Request, Response
from microdot.microdot import MUTED_SOCKET_ERRORS, NoCaseDict

from mimi import platform
from mimi.platform import const

REQUEST_TIMEOUT_S = const(10)  # a client that has not sent its whole request (handshake) by then is hung up on
_HEADERS_MAX = const(48)  # header lines of one request; past it: 431 and the connection closed
_HEAD_MAX = const(8 * 1024)  # bytes of the request line and headers together; past it: 431
_KEPT_MAX = const(2048)  # bytes of the kept headers' values together; past it: 431
_DRAIN_MS = const(1000)  # an answer before the whole request was read: what the client still sends is read
_DRAIN_IDLE_S = 0.1  # and dropped this long at most (or until it is silent this long), so that it hears the answer
_DRAIN_PIECE = const(256)
# The headers the gateway reads (the routes, the WebSocket handshake, MCP); the others a client sends (cookies
# of other sites on the same name, a browser's hints) are counted and dropped, so they cost no heap.
_KEPT = (b"host", b"origin", b"authorization", b"content-length", b"content-type", b"upgrade", b"connection",
         b"sec-websocket-key", b"sec-websocket-version", b"accept", b"if-none-match", b"mcp-protocol-version",
         b"mcp-session-id", b"mcp-method", b"mcp-name")


class HeadTooLarge(ValueError):
    """The request's head has more header lines or bytes than the gateway reads: answered 431."""


class Malformed(ValueError):
    """A request the gateway refuses to read, its reason in words: answered 400 with them."""


async def read_head(reader):
    """(the head as the gateway keeps it: its request line and kept header lines, bytes; the body's length;
    bytes read past the head) of the next request, or None when the connection closes first. Read through one
    fixed buffer of a line's size: a client that sends 1,500 headers holds no more than that. HeadTooLarge past
    the caps, ValueError for a line too long or malformed (UnicodeError: a kept line that is not UTF-8; Malformed:
    two Host headers, which a proxy and the board could read as two names)."""
    buf = bytearray(Request.max_readline)
    view = memoryview(buf)
    filled = used = count = values = length = hosts = 0
    kept = None
    while True:
        end = buf.find(b"\n", 0, filled)
        if end < 0:
            if filled == len(buf):
                raise ValueError("line too long")
            if used + filled > _HEAD_MAX:
                raise HeadTooLarge()
            got = await _read_into(reader, view[filled:])
            if not got:
                if kept is None and not filled:
                    return None
                raise ValueError("the connection closed inside the request's head")
            filled += got
            continue
        line = bytes(view[:end]).strip()
        line.decode()  # every line UTF-8 (UnicodeError: answered 400), the kept ones read as text by microdot
        used += end + 1
        view[:filled - end - 1] = view[end + 1:filled]
        filled -= end + 1
        if used > _HEAD_MAX:
            raise HeadTooLarge()
        if kept is None:
            if not line:
                return None
            words = line.split()
            if len(words) != 3 or not words[2].startswith(b"HTTP/"):
                raise ValueError("a request line of {} words".format(len(words)))
            kept = bytearray(line + b"\r\n")
            continue
        if not line:  # the blank line: the head is complete
            return bytes(kept + b"\r\n"), length, bytes(view[:filled])
        count += 1
        if count > _HEADERS_MAX:
            raise HeadTooLarge()
        name, colon, value = line.partition(b":")
        if not colon:
            raise ValueError("a header line without a colon")
        name = name.strip().lower()
        if name in _KEPT:
            if name == b"host":
                hosts += 1
                if hosts > 1:
                    raise Malformed("two Host headers: a request names one host")
            value = value.strip()
            values += len(value)
            if values > _KEPT_MAX:
                raise HeadTooLarge()
            if name == b"content-length":
                length = int(value)
                if length < 0:
                    raise ValueError("a Content-Length below 0")
            kept += line + b"\r\n"


async def _read_into(reader, view):
    if hasattr(reader, "readinto"):  # MicroPython's stream: into the buffer itself
        return await reader.readinto(view)
    data = await reader.read(len(view))  # CPython's StreamReader
    view[:len(data)] = data
    return len(data)


class Replay:
    """The reader the routes read: first what the gateway read already with the head (the body's start, a
    WebSocket client's first frames), then the connection's own. It counts down what the request's body still
    holds unread, so the answer's close knows whether the client is still sending."""

    def __init__(self, reader, length, *pieces):
        self.reader = reader
        self.pieces = [piece for piece in pieces if piece]
        self.unread = length

    def _take(self, n):
        piece = self.pieces[0]
        if n >= len(piece):
            self.pieces.pop(0)
            return self._count(piece)  # the whole piece: no copy
        self.pieces[0] = piece[n:]
        return self._count(piece[:n])

    def _count(self, data):
        self.unread -= data if isinstance(data, int) else len(data)
        return data

    async def read(self, n=-1):
        if self.pieces:
            return self._take(len(self.pieces[0]) if n < 0 else n)
        return self._count(await self.reader.read(n)) if self.reader else b""

    async def readexactly(self, n):
        if self.pieces and len(self.pieces[0]) >= n:
            return self._take(n)  # a small body read whole: the piece itself
        data = b""
        while self.pieces and len(data) < n:
            data += self._take(n - len(data))
        if len(data) < n:
            if self.reader is None:
                raise EOFError()
            data += self._count(await self.reader.readexactly(n - len(data)))
        return data

    async def readinto(self, buf):
        if self.pieces:
            data = self._take(len(buf))
            buf[:len(data)] = data
            return len(data)
        return self._count(await _read_into(self.reader, buf)) if self.reader else 0

    async def readline(self):
        if self.pieces:
            at = self.pieces[0].find(b"\n")
            return self._take(len(self.pieces[0]) if at < 0 else at + 1)
        return self._count(await self.reader.readline()) if self.reader else b""


async def drain(reader):
    """What a client still sends, read and dropped for a while: so that it hears an answer sent before its
    request was read whole (a close with unread data resets the connection, and the answer with it)."""
    buf = bytearray(_DRAIN_PIECE)
    view = memoryview(buf)
    deadline = platform.ticks_add(platform.ticks_ms(), _DRAIN_MS)
    try:
        while platform.ticks_diff(deadline, platform.ticks_ms()) > 0:
            if not await asyncio.wait_for(_read_into(reader, view), _DRAIN_IDLE_S):
                break
    except (asyncio.TimeoutError, OSError, EOFError):
        pass


async def read_body(replay, length):
    """A small body read whole into one buffer of its size (what came with the head first): one allocation, never
    its pieces joined. EOFError when the client stops inside it."""
    body = bytearray(length)
    view = memoryview(body)
    got = 0
    while got < length:
        count = await replay.readinto(view[got:])
        if not count:
            raise EOFError()
        got += count
    return body


def parsed_head(head):
    """(method, URL, HTTP version, headers) of a head read_head kept (its lines checked there)."""
    lines = head.decode().split("\r\n")
    method, url, version = lines[0].split()
    headers = NoCaseDict()
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name] = value.strip()
    return method, url, version.split("/", 1)[1], headers


class Web(Microdot):
    """microdot, each request's head read by the gateway first (handle_request: a deadline, the caps) and
    screened (screen(): nothing of its body read yet), then dispatched by microdot; uploads up to
    max_content_length (each request's, dispatch_request), every other route reading at most
    Request.max_body_length (16 KB), read whole once the screen let it through (streamed: routes that read it
    themselves)."""

    # /upload streams photos and files to flash: the media limits top out at 5 MB
    max_content_length = 5 * 1024 * 1024 + 4096
    streamed = ()  # paths whose body the route streams itself: never read whole

    async def screen(self, request):
        """Before any of the body is read: None to go on, else the answer (Response.already_handled: written);
        the connection is then closed. The routes' own (gateway/routes.py)."""
        return None

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
        """A silent or half-sent request no longer holds its connection (and its memory) open for ever; other
        clients are served meanwhile. The route and the token are checked on the head (screen): a refused request
        holds no byte of its body, and its connection is closed."""
        platform.tcp_nodelay(writer)
        started = platform.ticks_ms()
        try:
            read = await asyncio.wait_for(read_head(reader), REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError:
            _hung_up()
            read = None
        except HeadTooLarge:  # before any route: nothing kept, the client told, the connection closed
            platform.log("gateway: answered 431 to a request of over {} header lines or {} bytes".format(
                _HEADERS_MAX, _HEAD_MAX))
            await _refuse_unread(reader, writer, "431 Request Header Fields Too Large", "request header fields "
                                 "too large")
            return
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                platform.print_exception(exc)
            read = None
        except Exception as exc:  # a malformed request line or header: 400, and why
            reason = _malformed(exc)
            platform.log("gateway: answered 400 to a malformed request ({})".format(reason))
            await _refuse_unread(reader, writer, "400 Bad Request", "bad request: " + reason)
            return
        if read is None:
            await _close_quietly(writer)
            return
        head, length, rest = read
        replay = Replay(reader, length, rest)
        close = writer.aclose

        async def aclose():  # the last call: what the client still sends heard out first
            if replay.unread > 0:
                await drain(reader)
            await close()

        writer.aclose = aclose
        head = parsed_head(head)
        request = self._request(head, replay, writer)
        try:
            response = await self.screen(request)
        except Exception as exc:  # a bug, or no memory: this client is told, the gateway goes on
            platform.print_exception(exc)
            response = Response("the device could not take this request; try again later\n", 503)
        if response is None and 0 < length <= Request.max_body_length and request.path not in self.streamed:
            left_ms = REQUEST_TIMEOUT_S * 1000 - platform.ticks_diff(platform.ticks_ms(), started)
            try:  # let through: a small body is read whole, as microdot would
                body = await asyncio.wait_for(read_body(replay, length), max(left_ms, 0) / 1000)
            except asyncio.TimeoutError:
                _hung_up()
                await _close_quietly(writer)
                return
            except (EOFError, OSError):  # the client went away inside its body
                await _close_quietly(writer)
                return
            request = self._request(head, replay, writer, body)
        if response is None:
            response = await self.dispatch_request(request)
        try:
            if response != Response.already_handled:
                await response.write(writer)
            await writer.aclose()
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                raise

    def _request(self, head, replay, writer, body=b""):
        """microdot's Request of a parsed head: its body given once read whole, else the route reads it from the
        replay."""
        method, url, version, headers = head
        return Request(self, writer.get_extra_info("peername"), method, url, version, headers, body=body,
                       stream=None if body else replay, sock=(replay, writer))

    async def dispatch_request(self, req):
        if req:
            req.max_content_length = self.max_content_length
        return await super().dispatch_request(req)


async def refuse(request, status, text, header=None):
    """Answer with a short plain-text error, written by hand: WebSocket clients want HTTP/1.1
    and microdot answers HTTP/1.0."""
    body = (text + "\n").encode()
    head = "HTTP/1.1 {}\r\n{}Content-Type: text/plain; charset=utf-8\r\n" \
        "Content-Length: {}\r\nConnection: close\r\n\r\n".format(status, header + "\r\n" if header else "",
                                                                 len(body))
    await request.sock[1].awrite(head.encode() + body)
    return Response.already_handled


def _hung_up():
    platform.log("gateway: a client sent no complete request within {} s; hung up".format(REQUEST_TIMEOUT_S))


def _malformed(exc):
    """What was wrong with a request the gateway could not read, in a few words."""
    if isinstance(exc, Malformed):
        return str(exc)
    if isinstance(exc, UnicodeError):  # before ValueError: a subclass of it on both runtimes
        return "bytes that are not UTF-8"
    if "too long" in str(exc):
        return "a request line or header over {} bytes".format(Request.max_readline)
    return "{}: {}".format(type(exc).__name__, str(exc)[:60])


async def _refuse_unread(reader, writer, status, text):
    """A request refused before its head was read whole: told why, heard out briefly, closed."""
    body = (text + "\n").encode()
    try:
        await writer.awrite("HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n"
                            "Connection: close\r\n\r\n".format(status, len(body)).encode() + body)
    except OSError:
        pass
    await drain(reader)
    await _close_quietly(writer)


async def _close_quietly(writer):
    try:
        await writer.aclose()
    except Exception:  # the peer is gone already
        pass
