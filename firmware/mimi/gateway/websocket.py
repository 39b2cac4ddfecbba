# RFC 6455 WebSocket for the gateway: microdot's, plus fragments, close codes and UTF-8 checks.
import asyncio

from microdot import Request, Response
from microdot.helpers import wraps
from microdot.microdot import MUTED_SOCKET_ERRORS
from microdot.websocket import WebSocket as _MicrodotWebSocket
from microdot.websocket import WebSocketError

from mimi import platform
from mimi.platform import const
from mimi.gateway.frames import (  # noqa: F401  (re-exported: the public frame API)
    CLOSE_ABNORMAL,
    CLOSE_GOING_AWAY,
    CLOSE_INVALID_DATA,
    CLOSE_NORMAL,
    CLOSE_NO_STATUS,
    CLOSE_POLICY_VIOLATION,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_SERVER_ERROR,
    CLOSE_TOO_BIG,
    CLOSE_UNSUPPORTED_DATA,
    ConnectionClosed,
    MAX_MESSAGE_LENGTH,
    OP_BINARY,
    OP_CLOSE,
    OP_CONT,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    ProtocolError,
    close_payload,
    frame_header,
    parse_close,
    parse_header,
    read_payload,
    unmask,
    utf8_decode,
    utf8_tail,
    valid_close_code,
)

_SMALL_FRAME = const(1024)  # up to this size, header and payload go in one write (no Nagle stall)
_CLOSE_WAIT_MS = const(2000)  # how long close() waits for the peer's close frame
_DRAIN_IDLE_MS = const(100)  # after failing a connection: read until the peer is quiet this long
_DRAIN_MAX_MS = const(1000)  # ... but no longer than this
_DRAIN_CHUNK = const(512)
_FRAGMENTS_MAX = const(64)  # frames of one fragmented message, empty ones included


class WebSocket(_MicrodotWebSocket):
    """microdot's WebSocket made RFC 6455 conformant on receive.

    receive() returns a str (text) or bytes (binary) message, reassembled from its fragments,
    answers pings on the way and raises ConnectionClosed once the connection is closed (by the
    peer, by close(), or failed here with 1002/1007/1009 on a protocol violation).
    """

    max_message_length = MAX_MESSAGE_LENGTH  # 0: no limit; -1: Request.max_body_length
    max_fragments = _FRAGMENTS_MAX  # frames of one message, empty ones included; 0: no limit

    def __init__(self, request):
        super().__init__(request)
        self.close_code = None  # set once closed: the code sent or received (1006: dropped)
        self.heard_ms = platform.ticks_ms()  # when the peer's last frame came (a pong too): its silence
        self._write_lock = asyncio.Lock()  # a pong from receive() and a send() from another task
        self._reset_message()

    def _reset_message(self):
        self._opcode = OP_CONT  # opcode of the fragmented message in progress (OP_CONT: none)
        self._parts = []
        self._size = 0
        self._utf8_tail = b""

    async def handshake(self):
        if self.request.headers.get("Sec-WebSocket-Version") != "13":
            self.request.app.abort(426, "WebSocket version 13 required")
        await super().handshake()

    async def receive(self):
        """The next message: str for text, bytes for binary; ConnectionClosed once closed."""
        if self.closed:
            raise ConnectionClosed(self.close_code)
        try:
            while True:
                fin, opcode, payload = await self._read_frame()
                if opcode & 0x08:
                    await self._on_control(opcode, payload)
                    continue
                message = self._on_data(fin, opcode, payload)
                if message is not None:
                    return message
        except ProtocolError as exc:
            await self._fail(exc.code)
            raise ConnectionClosed(exc.code, str(exc))
        except (EOFError, OSError):  # TCP gone without a closing handshake
            self.closed = True
            self.close_code = CLOSE_ABNORMAL
            raise ConnectionClosed(CLOSE_ABNORMAL, "connection dropped")

    async def ping(self):
        """A ping (the peer answers with a pong, which receive() takes as a sign of life)."""
        if self.closed:
            raise ConnectionClosed(self.close_code)
        await self._send_frame(OP_PING, b"")

    async def send(self, data, opcode=None):
        """Send one message: a str as text, bytes as binary (or the given opcode)."""
        if self.closed:
            raise ConnectionClosed(self.close_code)
        if isinstance(data, str):
            data = data.encode()
            opcode = opcode or OP_TEXT
        await self._send_frame(opcode or OP_BINARY, data)

    async def close(self, code=CLOSE_NORMAL, reason=""):
        """Closing handshake: send close, wait up to 2 s for the peer's, close TCP.

        It reads the peer's frames, so call it when no receive() is waiting in another task.
        """
        if self.closed:
            return
        if not valid_close_code(code):
            raise ValueError("close code {} may not be sent".format(code))
        payload = close_payload(code, reason)
        self.closed = True
        self.close_code = code
        try:
            await self._send_frame(OP_CLOSE, payload)
            await asyncio.wait_for(self._close_reply(), _CLOSE_WAIT_MS / 1000)
        except (asyncio.TimeoutError, EOFError, OSError, WebSocketError):
            pass  # the peer answered badly or not at all: hang up anyway
        await self._close_tcp()

    async def end(self, code, reason=""):
        """Close from another task while receive() waits in its own: the close frame now (no frame is sent after
        it); the peer's answer, read by that receive(), ends the connection. Whoever calls this hangs up if the
        peer never answers."""
        if self.closed:
            return
        self.closed = True
        self.close_code = code
        await self._send_frame(OP_CLOSE, close_payload(code, reason))

    async def _read_frame(self):
        reader = self.request.sock[0]
        head = await reader.readexactly(2)
        fin, opcode, length = parse_header(head[0], head[1])
        if length == 126:
            length = int.from_bytes(await reader.readexactly(2), "big")
        elif length == 127:
            length = int.from_bytes(await reader.readexactly(8), "big")
            if length >> 63:
                raise ProtocolError(CLOSE_PROTOCOL_ERROR, "64-bit length with its top bit set")
        limit = self.max_message_length
        if limit == -1:
            limit = Request.max_body_length
        if not opcode & 0x08:  # a message's bytes and frames counted before anything is read or kept
            if limit and self._size + length > limit:
                raise ProtocolError(CLOSE_TOO_BIG, "message over {} bytes".format(limit))
            if self.max_fragments and len(self._parts) >= self.max_fragments:
                raise ProtocolError(CLOSE_TOO_BIG, "message of over {} frames".format(self.max_fragments))
        self.heard_ms = platform.ticks_ms()
        mask = await reader.readexactly(4)
        if not length:
            return fin, opcode, b""
        return fin, opcode, unmask(await read_payload(reader, length), mask)

    def _on_data(self, fin, opcode, payload):
        if opcode == OP_CONT:
            if self._opcode == OP_CONT:
                raise ProtocolError(CLOSE_PROTOCOL_ERROR, "continuation frame without a message")
        elif self._opcode != OP_CONT:
            raise ProtocolError(CLOSE_PROTOCOL_ERROR, "new message inside a fragmented one")
        elif fin:
            return self._message(opcode, payload)  # the common case: one frame, one message
        else:
            self._opcode = opcode
        if self._opcode == OP_TEXT and not fin:
            try:
                self._utf8_tail = utf8_tail(self._utf8_tail + payload)
            except ValueError:
                raise ProtocolError(CLOSE_INVALID_DATA, "text message is not valid UTF-8")
        self._parts.append(payload)
        self._size += len(payload)
        if not fin:
            return None
        opcode, parts = self._opcode, self._parts
        self._reset_message()
        return self._message(opcode, b"".join(parts))

    def _message(self, opcode, data):
        if opcode == OP_BINARY:
            return bytes(data)
        try:
            return utf8_decode(data)
        except ValueError:
            raise ProtocolError(CLOSE_INVALID_DATA, "text message is not valid UTF-8")

    async def _on_control(self, opcode, payload):
        if opcode == OP_PING:
            await self._send_frame(OP_PONG, payload)
        elif opcode == OP_CLOSE:
            code, reason = parse_close(payload)
            if not self.closed:  # the peer's close, answered; the answer to ours (end()) is not
                await self._send_frame(OP_CLOSE, close_payload(code or CLOSE_NORMAL))
                self.closed = True
                self.close_code = code or CLOSE_NO_STATUS
            await self._close_tcp()
            raise ConnectionClosed(self.close_code, reason)
        # a pong needs no answer

    async def _send_frame(self, opcode, data):
        writer = self.request.sock[1]
        header = frame_header(opcode, len(data))
        async with self._write_lock:  # MicroPython's stream allows one draining task at a time
            if len(data) <= _SMALL_FRAME:
                writer.write(header + data)
            else:
                writer.write(header)
                writer.write(data)
            await writer.drain()

    async def _close_reply(self):
        self._reset_message()
        while (await self._read_frame())[1] != OP_CLOSE:
            pass  # data the peer sent before it saw our close: dropped

    async def _fail(self, code):
        # Fail the connection: send close, swallow what the peer still sends (its close reply),
        # then close TCP with nothing unread, so the kernel sends FIN rather than RST.
        self.closed = True
        self.close_code = code
        try:
            await self._send_frame(OP_CLOSE, close_payload(code))
            reader = self.request.sock[0]
            deadline = platform.ticks_add(platform.ticks_ms(), _DRAIN_MAX_MS)
            while platform.ticks_diff(deadline, platform.ticks_ms()) > 0:
                if not await asyncio.wait_for(reader.read(_DRAIN_CHUNK), _DRAIN_IDLE_MS / 1000):
                    break
        except (asyncio.TimeoutError, EOFError, OSError):
            pass
        await self._close_tcp()

    async def _close_tcp(self):
        try:
            await self.request.sock[1].aclose()
        except OSError:
            pass


async def websocket_upgrade(request, websocket_class=WebSocket):
    """microdot's websocket_upgrade with this module's WebSocket (or a subclass of it)."""
    ws = websocket_class(request)
    await ws.handshake()

    @request.after_request
    async def after_request(request, response):
        return Response.already_handled

    return ws


def with_websocket(f):
    """Route decorator like microdot's: f(request, ws, ...) gets a conformant WebSocket.

    The connection is closed when f returns (1000) or raises (1011, the error printed).
    """

    @wraps(f)
    async def wrapper(request, *args, **kwargs):
        ws = await websocket_upgrade(request)
        code = CLOSE_NORMAL
        try:
            await f(request, ws, *args, **kwargs)
        except WebSocketError:
            pass
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                code = CLOSE_SERVER_ERROR
                platform.print_exception(exc)
        except Exception as exc:
            code = CLOSE_SERVER_ERROR
            platform.print_exception(exc)
        try:
            await ws.close(code)
        except Exception:  # the peer is gone: nothing left to tell it
            pass
        return Response.already_handled

    return wrapper
