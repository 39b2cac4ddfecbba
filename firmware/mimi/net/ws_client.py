# A WebSocket client (RFC 6455) on asyncio streams: TLS verified, masked frames out, bounded messages in.
import asyncio
import binascii
import hashlib
import os

from mimi.net import connect, http, ntp, tls
from mimi.platform import const

_OP_CONT, _OP_TEXT, _OP_BINARY, _OP_CLOSE, _OP_PING, _OP_PONG = 0, 1, 2, 8, 9, 10
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_HEAD_LINES_MAX = const(32)
_CHUNK = const(4096)  # bytes masked per big-int step


class Closed(OSError):
    """The connection ended: `code` is the peer's close code (None when it just went away)."""

    def __init__(self, code, reason=""):
        super().__init__("closed ({}{})".format(code, ": " + reason if reason else ""))
        self.code = code
        self.reason = reason


def _mask(data, key):
    out = bytearray(len(data))
    whole = int.from_bytes(key * (_CHUNK // 4), "big")
    for start in range(0, len(data), _CHUNK):
        piece = data[start:start + _CHUNK]
        count = len(piece)
        piece_key = whole if count == _CHUNK else whole >> (8 * (_CHUNK - count))
        out[start:start + count] = (int.from_bytes(piece, "big") ^ piece_key).to_bytes(count, "big")
    return out


class WebSocket:
    max_message = const(64 * 1024)  # bytes of one message from the server; more closes the connection

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.closed = False

    @classmethod
    async def connect(cls, url, seconds=http.CONNECT_TIMEOUT_S + http.TLS_HANDSHAKE_TIMEOUT_S):
        """Open ws:// or wss:// url; raises http.HTTPError (TLSError for an untrusted certificate)."""
        secure = url.startswith("wss://")
        tls_on, host, port, path = http.split_url(("https://" if secure else "http://") + url.split("://", 1)[-1])
        if tls_on and not ntp.synced():
            raise http.HTTPError(ntp.NOT_SET_TEXT.format(host))
        try:
            reader, writer = await asyncio.wait_for(
                connect.open_stream(host, port, tls.context(host) if tls_on else None), seconds)
        except asyncio.TimeoutError:
            raise http.NotSent("timed out connecting to " + host)
        except (OSError, ValueError) as exc:
            if connect.is_certificate_error(exc):
                raise http.TLSError(connect.explain(exc, host))
            raise http.NotSent("cannot reach {}:{} ({})".format(host, port, connect.explain(exc, host)))
        key = binascii.b2a_base64(os.urandom(16)).strip()
        named = host if port == (443 if tls_on else 80) else "{}:{}".format(host, port)
        head = ("GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n\r\n").format(path, named, key.decode())
        socket = cls(reader, writer)
        try:
            writer.write(head.encode())
            await asyncio.wait_for(writer.drain(), seconds)
            status = await asyncio.wait_for(reader.readline(), seconds)
            accept = None
            for _ in range(_HEAD_LINES_MAX):
                line = await asyncio.wait_for(reader.readline(), seconds)
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.decode().partition(":")
                if name.strip().lower() == "sec-websocket-accept":
                    accept = value.strip()
        except (OSError, ValueError, asyncio.TimeoutError) as exc:
            await socket.drop()
            if connect.is_certificate_error(exc):
                raise http.TLSError(connect.explain(exc, host))
            raise http.HTTPError("WebSocket handshake with {} failed ({})".format(host, exc or "timed out"))
        expected = binascii.b2a_base64(hashlib.sha1(key + _GUID).digest()).strip().decode()
        if b" 101 " not in status + b" " or accept != expected:
            await socket.drop()
            raise http.HTTPError("{} refused the WebSocket ({})".format(host, status.decode().strip()[:60]))
        return socket

    async def send(self, text):
        await self._frame(_OP_TEXT, text.encode() if isinstance(text, str) else text)

    async def _frame(self, opcode, data):
        size = len(data)
        if size < 126:
            head = bytes((0x80 | opcode, 0x80 | size))
        elif size < 0x10000:
            head = bytes((0x80 | opcode, 0x80 | 126, size >> 8, size & 0xFF))
        else:
            head = bytes((0x80 | opcode, 0x80 | 127)) + size.to_bytes(8, "big")
        key = os.urandom(4)
        self.writer.write(head + key + _mask(data, key))
        await self.writer.drain()

    async def receive(self):
        """The next message (str for text, bytes for binary); pings answered on the way. Closed when the
        connection ends (the close frame answered), OSError when it breaks."""
        parts, opcode, size = [], None, 0
        while True:
            head = await self.reader.readexactly(2)
            fin, op, length = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x7F
            if length == 126:
                length = int.from_bytes(await self.reader.readexactly(2), "big")
            elif length == 127:
                length = int.from_bytes(await self.reader.readexactly(8), "big")
            if head[1] & 0x80 or (not op & 0x08 and size + length > self.max_message):
                await self.close(1009 if length > self.max_message else 1002)
                raise Closed(None, "message too big or masked by the server")
            data = await self.reader.readexactly(length) if length else b""
            if op == _OP_PING:
                await self._frame(_OP_PONG, data)
            elif op == _OP_CLOSE:
                code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
                await self.close(code or 1000)
                raise Closed(code, bytes(data[2:]).decode("utf-8", "replace") if len(data) > 2 else "")
            elif op != _OP_PONG:
                if op != _OP_CONT:
                    opcode = op
                parts.append(data)
                size += length
                if fin:
                    whole = b"".join(parts)
                    return whole.decode() if opcode == _OP_TEXT else bytes(whole)

    async def close(self, code=1000):
        """The close frame (once), then the connection closed."""
        if not self.closed:
            self.closed = True
            try:
                await asyncio.wait_for(self._frame(_OP_CLOSE, bytes((code >> 8, code & 0xFF))), 2)
            except Exception:  # the peer may be gone
                pass
        await self.drop()

    async def drop(self):
        """The connection closed at once, no close frame (a dead link)."""
        self.closed = True
        try:
            self.writer.close()
            await asyncio.wait_for(self.writer.wait_closed(), 2)  # a TLS peer that never answers is not waited for
        except Exception:
            pass
