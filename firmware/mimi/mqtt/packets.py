# MQTT 3.1.1 packets: build the ones a client sends, read the ones a broker sends (bounded).
import struct

from mimi import utf8
from mimi.platform import const

CONNECT = const(0x10)
CONNACK = const(0x20)
PUBLISH = const(0x30)
PUBACK = const(0x40)
_SUBSCRIBE = const(0x82)
SUBACK = const(0x90)
_UNSUBSCRIBE = const(0xA2)
_PINGREQ = const(0xC0)
_PINGRESP = const(0xD0)
DISCONNECT = const(0xE0)
_DUP = const(0x08)
_RETAIN = const(0x01)
PACKET_MAX = const(16384)  # bytes of one packet read whole; a bigger PUBLISH is skipped, chunk by chunk
_SKIP_CHUNK = const(512)
_LENGTH_BYTES_MAX = const(4)

# CONNACK return codes (MQTT 3.1.1, 3.2.2.3), as a console line says them.
REFUSALS = {
    1: "the broker does not speak MQTT 3.1.1",
    2: "the broker refused the client id",
    3: "the MQTT service is unavailable",
    4: "wrong user name or password (mqtt_auth <user> <password>)",
    5: "not authorized: the broker wants a user and password, or this user may not connect (mqtt_auth)",
}
AUTH_CODES = (4, 5)


class ProtocolError(Exception):
    """The broker sent something that is not MQTT 3.1.1."""


def _length(n):
    out = bytearray()
    while True:
        byte = n % 128
        n //= 128
        out.append(byte | 0x80 if n else byte)
        if not n:
            return out


def _text(value):
    data = value.encode() if isinstance(value, str) else bytes(value)
    return struct.pack("!H", len(data)) + data


def _packet(first, body):
    return bytes([first]) + _length(len(body)) + body


def connect(client_id, keepalive, user=None, password=None, will=None, clean=True):
    """CONNECT; will = (topic, payload, qos, retain) or None."""
    flags = 0x02 if clean else 0
    payload = _text(client_id)
    if will is not None:
        topic, message, qos, retain = will
        flags |= 0x04 | (qos << 3) | (0x20 if retain else 0)
        payload += _text(topic) + _text(message)
    if user:
        flags |= 0x80
        payload += _text(user)
        if password:
            flags |= 0x40
            payload += _text(password)
    return _packet(CONNECT, _text("MQTT") + bytes([4, flags]) + struct.pack("!H", keepalive) + payload)


def publish(topic, payload, qos=0, retain=False, pid=0, dup=False):
    first = PUBLISH | (qos << 1) | (_RETAIN if retain else 0) | (_DUP if dup else 0)
    body = _text(topic) + (struct.pack("!H", pid) if qos else b"") + _bytes(payload)
    return _packet(first, body)


def _bytes(payload):
    return payload.encode() if isinstance(payload, str) else bytes(payload)


def puback(pid):
    return _packet(PUBACK, struct.pack("!H", pid))


def subscribe(pid, topics):
    """_SUBSCRIBE for [(topic filter, qos)]."""
    body = struct.pack("!H", pid)
    for topic, qos in topics:
        body += _text(topic) + bytes([qos])
    return _packet(_SUBSCRIBE, body)


def unsubscribe(pid, filters):
    """_UNSUBSCRIBE for [topic filter] (the broker's UNSUBACK is read and passed over)."""
    body = struct.pack("!H", pid)
    for topic in filters:
        body += _text(topic)
    return _packet(_UNSUBSCRIBE, body)


def pingreq():
    return bytes([_PINGREQ, 0])


def disconnect():
    return bytes([DISCONNECT, 0])


class Packet:
    """One packet from the broker: kind (high nibble), flags, and what it carries."""

    __slots__ = ("kind", "flags", "pid", "topic", "payload", "codes")

    def __init__(self, kind, flags):
        self.kind = kind
        self.flags = flags
        self.pid = 0
        self.topic = None
        self.payload = None  # None for a PUBLISH over PACKET_MAX (skipped)
        self.codes = b""  # CONNACK: (session present, return code); SUBACK: granted QoS per topic

    @property
    def qos(self):
        return (self.flags >> 1) & 3

    @property
    def retain(self):
        return bool(self.flags & _RETAIN)


async def read(reader, limit=PACKET_MAX):
    """The next packet from an asyncio stream; EOFError when the broker closed the connection."""
    head = await reader.readexactly(1)
    length, shift = 0, 0
    for _ in range(_LENGTH_BYTES_MAX):
        byte = (await reader.readexactly(1))[0]
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    else:
        raise ProtocolError("a packet length longer than 4 bytes")
    packet = Packet(head[0] & 0xF0, head[0] & 0x0F)
    if packet.kind != PUBLISH:
        if length > 255:
            raise ProtocolError("a control packet of {} bytes".format(length))
        body = await reader.readexactly(length) if length else b""
        if packet.kind in (PUBACK, SUBACK) and length >= 2:
            packet.pid = struct.unpack("!H", body[:2])[0]
            packet.codes = body[2:]
        elif packet.kind == CONNACK:
            packet.codes = body
        return packet
    topic_len = struct.unpack("!H", await reader.readexactly(2))[0]
    packet.topic = utf8.valid_text(await reader.readexactly(topic_len))
    rest = length - 2 - topic_len
    if packet.qos:
        packet.pid = struct.unpack("!H", await reader.readexactly(2))[0]
        rest -= 2
    if rest < 0:
        raise ProtocolError("a PUBLISH shorter than its topic")
    if rest <= limit:
        packet.payload = await reader.readexactly(rest) if rest else b""
        return packet
    while rest > 0:  # too big to hold: read past it, so the connection stays usable
        chunk = await reader.readexactly(min(rest, _SKIP_CHUNK))
        rest -= len(chunk)
    return packet


def matches(topic_filter, topic):
    """True when topic matches an MQTT filter with + (one level) and # (the rest)."""
    want, got = topic_filter.split("/"), topic.split("/")
    for i, part in enumerate(want):
        if part == "#":
            return True
        if i >= len(got) or (part != "+" and part != got[i]):
            return False
    return len(want) == len(got)


def check_topic(topic, wildcards=False):
    """ValueError unless topic is a valid topic name (or filter when wildcards is True)."""
    if not isinstance(topic, str) or not topic or len(topic.encode()) > 256:
        raise ValueError("a topic is 1 to 256 bytes of text")
    for ch in topic:
        if ord(ch) < 32 or ch == "\x7f":
            raise ValueError("a topic cannot hold control characters")
    parts = topic.split("/")
    for i, part in enumerate(parts):
        if "+" in part or "#" in part:
            if not wildcards:
                raise ValueError("'{}' has a wildcard (+ or #); name one topic".format(topic))
            if part not in ("+", "#") or (part == "#" and i != len(parts) - 1):
                raise ValueError("'{}': + and # must stand alone, # only at the end".format(topic))
    return topic
