# WebSocket frames (RFC 6455): close codes, opcodes, headers, unmasking and strict UTF-8.
from microdot.websocket import WebSocketError

from mimi.platform import const
from mimi.utf8 import SECOND_BYTE_RANGE
from mimi.utf8 import strict as utf8_decode  # noqa: F401  (re-exported for the WebSocket layer)

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

OP_CONT = const(0)
OP_TEXT = const(1)
OP_BINARY = const(2)
OP_CLOSE = const(8)
OP_PING = const(9)
OP_PONG = const(10)

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
    if opcode not in (OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG):
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
        low, high = SECOND_BYTE_RANGE.get(lead, (0x80, 0xBF))
        if not low <= tail[1] <= high:
            raise ValueError("invalid UTF-8")
    utf8_decode(data[:start])
    return tail
