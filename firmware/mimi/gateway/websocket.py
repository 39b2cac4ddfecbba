# RFC 6455 WebSocket for the gateway: microdot's, plus fragments, close codes and UTF-8 checks.
import asyncio

from microdot import Request, Response
from microdot.helpers import wraps
from microdot.microdot import MUTED_SOCKET_ERRORS
from microdot.websocket import WebSocket as _MicrodotWebSocket
from microdot.websocket import WebSocketError

from mimi import platform
from mimi.platform import const

# Close codes (RFC 6455 7.4.1); 1005 and 1006 only describe a close, they are never sent.
CLOSE_NORMAL = const(1000)
CLOSE_GOING_AWAY = const(1001)
CLOSE_PROTOCOL_ERROR = const(1002)
CLOSE_UNSUPPORTED_DATA = const(1003)
CLOSE_NO_STATUS = const(1005)
CLOSE_ABNORMAL = const(1006)
CLOSE_INVALID_DATA = const(1007)
CLOSE_POLICY_VIOLATION = const(1008)
CLOSE_TOO_BIG = const(1009)
CLOSE_SERVER_ERROR = const(1011)

MAX_MESSAGE_LENGTH = const(16 * 1024)  # default cap on a reassembled message
_MAX_CONTROL_PAYLOAD = const(125)
_UNMASK_CHUNK = const(4096)  # bytes XORed per big-int step; a multiple of 4 keeps the mask aligned
_SMALL_FRAME = const(1024)  # up to this size, header and payload go in one write (no Nagle stall)
_CLOSE_WAIT_MS = const(2000)  # how long close() waits for the peer's close frame
_DRAIN_IDLE_MS = const(100)  # after failing a connection: read until the peer is quiet this long
_DRAIN_MAX_MS = const(1000)  # ... but no longer than this
_DRAIN_CHUNK = const(512)

_CONT = const(0)
_TEXT = const(1)
_BINARY = const(2)
_CLOSE = const(8)
_PING = const(9)
_PONG = const(10)

# lead byte: (lowest, highest) second byte. MicroPython's decoder does not check these: outside
# them are overlong forms, UTF-16 surrogates and code points above U+10FFFF.
_SECOND_BYTE_RANGE = {
    0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F),
}
_NEVER_IN_UTF8 = b"\xc0\xc1\xf5\xf6\xf7\xf8\xf9\xfa\xfb\xfc\xfd\xfe\xff"


class ProtocolError(WebSocketError):
    """The peer broke the protocol; the connection is failed with close code `code`."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class ConnectionClosed(WebSocketError):
    """The connection is closed; `code` and `reason` say how (1005: no code, 1006: dropped)."""

    def __init__(self, code, reason=""):
        super().__init__("WebSocket connection closed ({}) {}".format(code, reason).rstrip())
        self.code = code
        self.reason = reason


def unmask(payload, mask):
    """payload XOR the 4-byte mask repeated, by big-int XOR a chunk at a time.

    A bytearray is unmasked in place and returned; anything else gives a new bytearray.
    """
    size = len(payload)
    out = payload if isinstance(payload, bytearray) else bytearray(size)
    key = int.from_bytes(mask * (_UNMASK_CHUNK // 4), "big")
    view = memoryview(payload)
    for start in range(0, size, _UNMASK_CHUNK):
        piece = view[start:start + _UNMASK_CHUNK]
        count = len(piece)
        piece_key = key if count == _UNMASK_CHUNK else key >> (8 * (_UNMASK_CHUNK - count))
        clear = int.from_bytes(piece, "big") ^ piece_key
        out[start:start + count] = clear.to_bytes(count, "big")
    return out


async def read_payload(reader, size):
    """size bytes from the stream; into one preallocated bytearray where it has readinto."""
    if not hasattr(reader, "readinto"):  # CPython's StreamReader
        return await reader.readexactly(size)
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        count = await reader.readinto(view[got:])
        if not count:
            raise EOFError("connection closed inside a frame")
        got += count
    return buf


def parse_header(first, second):
    """The first two header bytes -> (fin, opcode, 7-bit length); ProtocolError if not allowed."""
    fin = bool(first & 0x80)
    opcode = first & 0x0F
    length = second & 0x7F
    if first & 0x70:
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "reserved bits set without an extension")
    if opcode not in (_CONT, _TEXT, _BINARY, _CLOSE, _PING, _PONG):
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "unknown opcode {}".format(opcode))
    if not second & 0x80:
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "client frame not masked")
    if opcode & 0x08 and not fin:
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "fragmented control frame")
    if opcode & 0x08 and length > _MAX_CONTROL_PAYLOAD:
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "control frame payload over 125 bytes")
    return fin, opcode, length


def frame_header(opcode, length, fin=True):
    """A server (unmasked) frame header with the shortest length encoding."""
    first = (0x80 if fin else 0) | opcode
    if length < 126:
        return bytes((first, length))
    if length < 0x10000:
        return bytes((first, 126, length >> 8, length & 0xFF))
    return bytes((first, 127)) + length.to_bytes(8, "big")


def valid_close_code(code):
    """Whether a peer may send this code: 1000-1003, 1007-1014 (defined), 3000-4999."""
    return 1000 <= code <= 1003 or 1007 <= code <= 1014 or 3000 <= code <= 4999


def close_payload(code, reason=""):
    """The payload of a close frame: 2-byte code then the UTF-8 reason (at most 123 bytes)."""
    data = reason.encode() if isinstance(reason, str) else bytes(reason)
    if 2 + len(data) > _MAX_CONTROL_PAYLOAD:
        raise ValueError("close reason is longer than 123 bytes")
    return bytes((code >> 8, code & 0xFF)) + data


def parse_close(payload):
    """A close frame's payload -> (code or None, reason); ProtocolError 1002/1007 if malformed."""
    if not payload:
        return None, ""
    if len(payload) == 1:
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "close frame payload of 1 byte")
    code = (payload[0] << 8) | payload[1]
    if not valid_close_code(code):
        raise ProtocolError(CLOSE_PROTOCOL_ERROR, "close code {} is not allowed".format(code))
    try:
        return code, utf8_decode(payload[2:])
    except ValueError:
        raise ProtocolError(CLOSE_INVALID_DATA, "close reason is not valid UTF-8")


def utf8_decode(data):
    """Complete UTF-8 bytes -> str; ValueError unless strictly valid (no overlongs, surrogates)."""
    try:
        text = str(data, "utf-8")
    except UnicodeError:
        raise ValueError("invalid UTF-8")
    if len(text) != len(data):  # not pure ASCII: add the checks MicroPython's decoder skips
        for byte in _NEVER_IN_UTF8:
            if data.find(bytes((byte,))) >= 0:
                raise ValueError("invalid UTF-8")
        for lead, (low, high) in _SECOND_BYTE_RANGE.items():
            lead_byte = bytes((lead,))
            at = data.find(lead_byte)
            while at >= 0:
                if not low <= data[at + 1] <= high:  # a decoded lead byte always has a next byte
                    raise ValueError("invalid UTF-8")
                at = data.find(lead_byte, at + 1)
    return text


def utf8_tail(data):
    """Check a message's UTF-8 so far; return its trailing bytes of a not yet complete character.

    ValueError as soon as data cannot begin a valid UTF-8 text (fail fast on fragments).
    """
    if not data:
        return b""
    start = len(data)
    while start > 0 and len(data) - start < 3 and data[start - 1] & 0xC0 == 0x80:
        start -= 1  # back over continuation bytes to the lead byte of the last character
    start = max(start - 1, 0)
    lead = data[start]
    needed = 2 if 0xC0 <= lead < 0xE0 else 3 if 0xE0 <= lead < 0xF0 else 4 if lead >= 0xF0 else 1
    if len(data) - start >= needed:  # the last character is complete: check everything
        utf8_decode(data)
        return b""
    tail = bytes(data[start:])
    if not 0xC2 <= lead <= 0xF4:
        raise ValueError("invalid UTF-8")
    if len(tail) > 1:
        low, high = _SECOND_BYTE_RANGE.get(lead, (0x80, 0xBF))
        if not low <= tail[1] <= high:
            raise ValueError("invalid UTF-8")
    utf8_decode(data[:start])
    return tail


class WebSocket(_MicrodotWebSocket):
    """microdot's WebSocket made RFC 6455 conformant on receive.

    receive() returns a str (text) or bytes (binary) message, reassembled from its fragments,
    answers pings on the way and raises ConnectionClosed once the connection is closed (by the
    peer, by close(), or failed here with 1002/1007/1009 on a protocol violation).
    """

    max_message_length = MAX_MESSAGE_LENGTH  # 0: no limit; -1: Request.max_body_length

    def __init__(self, request):
        super().__init__(request)
        self.close_code = None  # set once closed: the code sent or received (1006: dropped)
        self._write_lock = asyncio.Lock()  # a pong from receive() and a send() from another task
        self._reset_message()

    def _reset_message(self):
        self._opcode = _CONT  # opcode of the fragmented message in progress (_CONT: none)
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

    async def send(self, data, opcode=None):
        """Send one message: a str as text, bytes as binary (or the given opcode)."""
        if self.closed:
            raise ConnectionClosed(self.close_code)
        if isinstance(data, str):
            data = data.encode()
            opcode = opcode or _TEXT
        await self._send_frame(opcode or _BINARY, data)

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
            await self._send_frame(_CLOSE, payload)
            await asyncio.wait_for(self._close_reply(), _CLOSE_WAIT_MS / 1000)
        except (asyncio.TimeoutError, EOFError, OSError, WebSocketError):
            pass  # the peer answered badly or not at all: hang up anyway
        await self._close_tcp()

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
        if not opcode & 0x08 and limit and self._size + length > limit:
            raise ProtocolError(CLOSE_TOO_BIG, "message over {} bytes".format(limit))
        mask = await reader.readexactly(4)
        if not length:
            return fin, opcode, b""
        return fin, opcode, unmask(await read_payload(reader, length), mask)

    def _on_data(self, fin, opcode, payload):
        if opcode == _CONT:
            if self._opcode == _CONT:
                raise ProtocolError(CLOSE_PROTOCOL_ERROR, "continuation frame without a message")
        elif self._opcode != _CONT:
            raise ProtocolError(CLOSE_PROTOCOL_ERROR, "new message inside a fragmented one")
        elif fin:
            return self._message(opcode, payload)  # the common case: one frame, one message
        else:
            self._opcode = opcode
        if self._opcode == _TEXT and not fin:
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
        if opcode == _BINARY:
            return bytes(data)
        try:
            return utf8_decode(data)
        except ValueError:
            raise ProtocolError(CLOSE_INVALID_DATA, "text message is not valid UTF-8")

    async def _on_control(self, opcode, payload):
        if opcode == _PING:
            await self._send_frame(_PONG, payload)
        elif opcode == _CLOSE:
            code, reason = parse_close(payload)
            await self._send_frame(_CLOSE, close_payload(code or CLOSE_NORMAL))
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
        while (await self._read_frame())[1] != _CLOSE:
            pass  # data the peer sent before it saw our close: dropped

    async def _fail(self, code):
        # Fail the connection: send close, swallow what the peer still sends (its close reply),
        # then close TCP with nothing unread, so the kernel sends FIN rather than RST.
        self.closed = True
        self.close_code = code
        try:
            await self._send_frame(_CLOSE, close_payload(code))
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
