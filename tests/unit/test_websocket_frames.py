# The gateway's RFC 6455 layer without sockets: frame helpers, UTF-8 checks, and the
# receive/close logic over an in-memory transport.
import os
import sys

import asyncio

from support import raises, run

try:
    import microdot  # noqa: F401
except ImportError:  # mp_run.py: microdot is in the venv's site-packages (as in host_sim/run.py)
    for _name in os.listdir(".venv/lib"):
        sys.path.append(".venv/lib/" + _name + "/site-packages")

from mimi.gateway import websocket
from mimi.gateway.websocket import ConnectionClosed, ProtocolError, WebSocket

MASK = b"\x37\xfa\x21\x3d"


def reference_mask(payload, mask):
    return bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def client_frame(opcode, payload=b"", fin=True, rsv=0, mask=MASK):
    """A frame as a client sends it (masked); mask=None for a broken, unmasked one."""
    if isinstance(payload, str):
        payload = payload.encode()
    first = (0x80 if fin else 0) | rsv | opcode
    size = len(payload)
    if size < 126:
        head = bytes((first, size))
    elif size < 65536:
        head = bytes((first, 126, size >> 8, size & 0xFF))
    else:
        head = bytes((first, 127)) + size.to_bytes(8, "big")
    if mask is None:
        return head + payload
    return bytes((head[0], head[1] | 0x80)) + head[2:] + mask + reference_mask(payload, mask)


def server_frames(data):
    """The (fin, opcode, payload) frames the server wrote; they must be unmasked."""
    frames = []
    data = memoryview(data)
    pos = 0
    while pos < len(data):
        first, second = data[pos], data[pos + 1]
        assert not second & 0x80, "server frames are never masked"
        size, pos = second & 0x7F, pos + 2
        if size == 126:
            size, pos = int.from_bytes(data[pos:pos + 2], "big"), pos + 2
        elif size == 127:
            size, pos = int.from_bytes(data[pos:pos + 8], "big"), pos + 8
        frames.append((bool(first & 0x80), first & 0x0F, bytes(data[pos:pos + size])))
        pos += size
    return frames


class FakeReader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    async def readexactly(self, n):
        if self.pos + n > len(self.data):
            self.pos = len(self.data)
            raise EOFError("end of stream")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    async def read(self, n):
        self.pos += n
        return self.data[self.pos - n:self.pos]


class FakeWriter:
    def __init__(self):
        self.out = bytearray()
        self.closed = False
        self.draining = False

    def write(self, data):
        assert not self.closed, "write after the TCP connection was closed"
        self.out += data

    async def drain(self):
        assert not self.draining, "two tasks drain the stream at once"  # MicroPython forbids it
        self.draining = True
        await asyncio.sleep(0)
        self.draining = False

    async def aclose(self):
        self.closed = True


class FakeRequest:
    def __init__(self, data):
        self.sock = (FakeReader(data), FakeWriter())
        self.headers = {}


def connect(*frames):
    return WebSocket(FakeRequest(b"".join(frames)))


async def receive_all(ws):
    """Every message until the connection closes, then the ConnectionClosed."""
    messages = []
    while True:
        try:
            messages.append(await ws.receive())
        except ConnectionClosed as exc:
            return messages, exc


def written(ws):
    return server_frames(ws.request.sock[1].out)


# -- helpers --
def test_unmask_matches_the_rfc_example_and_a_bytewise_xor():
    assert bytes(websocket.unmask(b"\x7f\x9f\x4d\x51\x58", MASK)) == b"Hello"  # RFC 6455 5.7
    for size in (0, 1, 3, 4, 5, 4095, 4096, 4097, 10001):
        payload = bytes((i * 7 + 3) & 0xFF for i in range(size))
        assert bytes(websocket.unmask(payload, MASK)) == reference_mask(payload, MASK), size


def test_unmask_keeps_leading_zero_bytes():
    assert bytes(websocket.unmask(b"\x37\xfa\x21\x3d\x37", MASK)) == b"\x00\x00\x00\x00\x00"


def test_frame_header_uses_the_shortest_length_encoding():
    assert websocket.frame_header(1, 125) == b"\x81\x7d"
    assert websocket.frame_header(2, 126) == b"\x82\x7e\x00\x7e"
    assert websocket.frame_header(2, 65535) == b"\x82\x7e\xff\xff"
    assert websocket.frame_header(2, 65536) == b"\x82\x7f\x00\x00\x00\x00\x00\x01\x00\x00"
    assert websocket.frame_header(0, 3, fin=False) == b"\x00\x03"


def test_parse_header_accepts_masked_frames():
    assert websocket.parse_header(0x81, 0x85) == (True, 1, 5)
    assert websocket.parse_header(0x00, 0xFE) == (False, 0, 126)
    assert websocket.parse_header(0x89, 0xFD) == (True, 9, 125)


def test_parse_header_rejects_what_rfc_6455_forbids_with_1002():
    for first, second in (
        (0xC1, 0x80),  # RSV1 without an extension
        (0x83, 0x80),  # reserved data opcode
        (0x8B, 0x80),  # reserved control opcode
        (0x81, 0x05),  # unmasked client frame
        (0x09, 0x80),  # fragmented ping
        (0x89, 0xFE),  # ping with a 126-byte payload
    ):
        exc = raises(ProtocolError, websocket.parse_header, first, second)
        assert exc.code == 1002, (first, second)


def test_close_codes_the_peer_may_send():
    for code in (1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999):
        assert websocket.valid_close_code(code), code
    for code in (0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535):
        assert not websocket.valid_close_code(code), code


def test_parse_close():
    assert websocket.parse_close(b"") == (None, "")
    assert websocket.parse_close(b"\x03\xe8") == (1000, "")
    assert websocket.parse_close(b"\x0f\xa0bye \xc3\xa9") == (4000, "bye é")
    assert raises(ProtocolError, websocket.parse_close, b"\x03").code == 1002
    assert raises(ProtocolError, websocket.parse_close, b"\x03\xed").code == 1002  # 1005
    assert raises(ProtocolError, websocket.parse_close, b"\x03\xe8\xed\xa0\x80").code == 1007


def test_close_payload():
    assert websocket.close_payload(1001, "bye") == b"\x03\xe9bye"
    assert len(websocket.close_payload(1000, "x" * 123)) == 125
    raises(ValueError, websocket.close_payload, 1000, "x" * 124)


def test_utf8_decode_is_strict_on_both_runtimes():
    assert websocket.utf8_decode(b"ascii") == "ascii"
    assert websocket.utf8_decode("κόσμε \U0010ffff".encode()) == "κόσμε \U0010ffff"
    for bad in (
        b"\xff", b"\x80", b"a\xc3", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf",  # overlong forms
        b"\xed\xa0\x80", b"\xed\xbf\xbf",  # UTF-16 surrogates
        b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xf0\x8f\xbf\xbf",  # above U+10FFFF, overlong
    ):
        raises(ValueError, websocket.utf8_decode, bad)


def test_utf8_tail_keeps_an_unfinished_character_and_fails_fast():
    euro = "€".encode()  # e2 82 ac
    assert websocket.utf8_tail(b"") == b""
    assert websocket.utf8_tail(b"ab" + euro) == b""
    assert websocket.utf8_tail(b"ab" + euro[:2]) == euro[:2]
    assert websocket.utf8_tail(b"\xf4\x8f\xbf") == b"\xf4\x8f\xbf"
    bad_starts = (b"ok\xf4\x90", b"\xed\xa0", b"\xe0\x80", b"\xf0\x80", b"\xc0", b"\xf8\x88",
                  b"\xff", b"\x80", b"\xf4\x8f\xbf\xbf\xf4\x90")
    for bad in bad_starts:
        raises(ValueError, websocket.utf8_tail, bad)


# -- the connection over an in-memory transport --
def test_fragmented_text_with_a_ping_between_the_fragments():
    ws = connect(
        client_frame(1, "fragm", fin=False),
        client_frame(9, "are you there"),
        client_frame(0, "ented ", fin=False),
        client_frame(0, "\xe9", fin=True),
        client_frame(2, b"\x00\x01"),
        client_frame(8, b"\x03\xe8"),
    )
    messages, closed = run(receive_all(ws))
    assert messages == ["fragmented \xe9", b"\x00\x01"]
    assert closed.code == 1000
    assert written(ws) == [(True, 10, b"are you there"), (True, 8, b"\x03\xe8")]
    assert ws.request.sock[1].closed


def test_protocol_errors_close_with_their_code():
    cases = (
        (1002, [client_frame(0, "orphan continuation")]),
        (1002, [client_frame(1, "a", fin=False), client_frame(1, "b")]),
        (1002, [client_frame(1, "x", rsv=0x40)]),
        (1002, [client_frame(1, "unmasked", mask=None)]),
        (1002, [client_frame(8, b"\x03")]),
        (1002, [client_frame(8, b"\x03\xee")]),  # 1006 may not be sent
        (1007, [client_frame(8, b"\x03\xe8\xff")]),
        (1007, [client_frame(1, b"\xce\xba\xed\xa0\x80")]),
        (1007, [client_frame(1, b"ok", fin=False), client_frame(0, b"\xf4\x90", fin=False)]),
        (1009, [client_frame(2, b"x" * 20000)]),
        (1009, [client_frame(2, b"x" * 9000, fin=False), client_frame(0, b"x" * 9000)]),
    )
    for code, frames in cases:
        ws = connect(*frames)
        messages, closed = run(receive_all(ws))
        assert messages == [] and closed.code == code, (code, frames)
        assert written(ws) == [(True, 8, bytes((code >> 8, code & 0xFF)))], (code, frames)


def test_close_without_a_code_is_answered_with_1000_and_reported_as_1005():
    ws = connect(client_frame(8))
    messages, closed = run(receive_all(ws))
    assert closed.code == 1005
    assert written(ws) == [(True, 8, b"\x03\xe8")]


def test_a_dropped_connection_reports_1006_and_receive_keeps_raising():
    ws = connect(client_frame(1, "half", fin=False))
    messages, closed = run(receive_all(ws))
    assert messages == [] and closed.code == 1006 and written(ws) == []
    assert run(receive_all(ws))[1].code == 1006


def test_send_uses_text_for_str_and_binary_for_bytes():
    ws = connect(client_frame(8, b"\x03\xe8"))
    run(ws.send("h\xe9"))
    run(ws.send(b"\x01" * 65536))  # the 8-byte length form
    frames = written(ws)
    assert frames[0] == (True, 1, "h\xe9".encode())
    assert frames[1][:2] == (True, 2) and frames[1][2] == b"\x01" * 65536


def test_close_sends_the_code_waits_for_the_reply_then_closes_tcp():
    ws = connect(client_frame(1, "late message"), client_frame(8, b"\x0b\xb8"))
    run(ws.close(3000, "done"))
    assert written(ws) == [(True, 8, b"\x0b\xb8done")]
    assert ws.request.sock[1].closed
    exc = raises(ConnectionClosed, run, ws.send("after close"))
    assert exc.code == 3000
    raises(ValueError, run, connect().close(1006))


def test_sends_from_two_tasks_go_out_one_frame_after_the_other():
    ws = connect()

    async def two_senders():
        await asyncio.gather(ws.send("a" * 2000), ws.send(b"b" * 3000))

    run(two_senders())
    assert written(ws) == [(True, 1, b"a" * 2000), (True, 2, b"b" * 3000)]
