# The gateway's microdot: each request's head read first, within a deadline and bounded before anyone is
# authenticated (only the headers the gateway uses kept), then served by microdot's own handle_request from what
# was read; a connection closed only once the client has stopped sending (a lingering close), Nagle's algorithm
# off per connection.
import asyncio

from microdot import Microdot, Request, Response
from microdot.microdot import MUTED_SOCKET_ERRORS

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


async def read_head(reader):
    """(the head as the gateway keeps it: its request line and kept header lines, bytes; the body's length;
    bytes read past the head) of the next request, or None when the connection closes first. Read through one
    fixed buffer of a line's size: a client that sends 1,500 headers holds no more than that. HeadTooLarge past
    the caps, ValueError for a line too long or malformed (UnicodeError: a kept line that is not UTF-8)."""
    buf = bytearray(Request.max_readline)
    view = memoryview(buf)
    filled = used = count = values = length = 0
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
    """The reader microdot and the routes read: first what the gateway read already (the kept head, the
    body's start or a small body read whole, a WebSocket client's first frames), then the connection's own
    (none: the connection read to its end). It counts down what the request still holds unread (head and
    body), so the answer's close knows whether the client is still sending."""

    def __init__(self, reader, head, length, *rest):
        self.reader = reader
        self.pieces = [piece for piece in (head,) + rest if piece]
        self.unread = len(head) + length

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


async def read_request(reader):
    """The head read (read_head), and a small body too (microdot reads it whole): (head, length, the bytes that
    came with the head, the rest of a small body), or None when the connection closed first."""
    head = await read_head(reader)
    if head is None:
        return None
    head, length, rest = head
    more = b""
    if len(rest) < length <= Request.max_body_length:
        more = await reader.readexactly(length - len(rest))
    return head, length, rest, more


class Web(Microdot):
    """microdot, each request's head read by the gateway first (handle_request: a deadline, the caps), served
    by microdot's own handle_request from a Replay of it; uploads up to max_content_length (each request's,
    dispatch_request), every other route reading at most Request.max_body_length (16 KB)."""

    # /upload streams photos and files to flash: the media limits top out at 5 MB
    max_content_length = 5 * 1024 * 1024 + 4096

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
        clients are served meanwhile. What microdot reads is what the gateway kept."""
        platform.tcp_nodelay(writer)
        try:
            read = await asyncio.wait_for(read_request(reader), REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError:
            platform.log("gateway: a client sent no complete request within {} s; hung up".format(
                REQUEST_TIMEOUT_S))
            read = None
        except HeadTooLarge:  # before any route: nothing kept, the client told, the connection closed
            platform.log("gateway: answered 431 to a request of over {} header lines or {} bytes".format(
                _HEADERS_MAX, _HEAD_MAX))
            await _too_large(reader, writer)
            return
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                platform.print_exception(exc)
            read = None
        except Exception as exc:  # a malformed request line or header: microdot answers 400 to nothing read
            platform.log("gateway: answered 400 to a malformed request ({})".format(_malformed(exc)))
            read = (b"", 0)
        if read is None:
            await _close_quietly(writer)
            return
        # a malformed request: nothing to read (microdot's answer to no request is its 400)
        replay = Replay(reader if read[0] else None, *read)
        close = writer.aclose

        async def aclose():  # microdot's last call: what the client still sends heard out first
            if replay.unread > 0 or replay.reader is None:
                await drain(reader)
            await close()

        writer.aclose = aclose
        await super().handle_request(replay, writer)

    async def dispatch_request(self, req):
        if req:
            req.max_content_length = self.max_content_length
        return await super().dispatch_request(req)


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
    except OSError:
        pass
    await drain(reader)
    await _close_quietly(writer)


async def _close_quietly(writer):
    try:
        await writer.aclose()
    except Exception:  # the peer is gone already
        pass
