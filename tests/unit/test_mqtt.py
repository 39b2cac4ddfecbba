# MQTT pieces: packets as MQTT 3.1.1 spells them, requests on `in`, discovery configs, the client over loopback.
import asyncio
import json

from support import raises, run

from mimi.mqtt import discovery, messages, packets
from mimi.mqtt.client import Client, Refused


class Stream:
    """Bytes read as an asyncio stream would give them."""

    def __init__(self, data):
        self.data = data
        self.at = 0

    async def readexactly(self, n):
        if self.at + n > len(self.data):
            raise EOFError("end of stream")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out


def _read(data, limit=packets.PACKET_MAX):
    return run(packets.read(Stream(data), limit))


def test_connect_packet_is_byte_exact():
    data = packets.connect("mimi-k", 60, "kitchen", "pw", ("mimi/k/availability", b"offline", 1, True), False)
    body = (b"\x00\x04MQTT\x04" + bytes([0x80 | 0x40 | 0x20 | 0x08 | 0x04]) + b"\x00\x3c" + b"\x00\x06mimi-k"
            + b"\x00\x13mimi/k/availability" + b"\x00\x07offline" + b"\x00\x07kitchen" + b"\x00\x02pw")
    assert data == bytes([0x10, len(body)]) + body


def test_remaining_length_uses_several_bytes_past_127():
    data = packets.publish("t", b"x" * 200)
    assert data[0] == 0x30 and data[1:3] == bytes([0xCB, 0x01])  # 203 = 0x4B + 1 * 128
    packet = _read(data)
    assert packet.topic == "t" and packet.payload == b"x" * 200 and packet.qos == 0


def test_qos1_publish_round_trip_with_dup_and_retain():
    data = packets.publish("mimi/k/in", '{"text":"hi"}', 1, True, 513, dup=True)
    assert data[0] == 0x30 | 0x08 | 0x02 | 0x01
    packet = _read(data)
    assert (packet.topic, packet.pid, packet.payload, packet.retain) == ("mimi/k/in", 513, b'{"text":"hi"}', True)


def test_an_oversized_publish_is_skipped_and_the_next_packet_still_reads():
    stream = Stream(packets.publish("big", b"y" * 3000, 1, pid=9) + bytes([0x40, 2, 0, 9]))
    big = run(packets.read(stream, 1000))
    assert big.payload is None and big.pid == 9  # still acknowledged by its id
    ack = run(packets.read(stream))
    assert ack.kind == packets.PUBACK and ack.pid == 9


def test_connack_suback_and_a_bad_length():
    assert _read(bytes([0x20, 2, 0, 5])).codes == bytes([0, 5])
    suback = _read(bytes([0x90, 4, 0, 7, 1, 0x80]))
    assert suback.pid == 7 and list(suback.codes) == [1, 0x80]
    raises(packets.ProtocolError, _read, bytes([0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]))


def test_subscribe_and_unsubscribe_packets_are_byte_exact():
    assert packets.subscribe(7, [("a/b", 1)]) == bytes([0x82, 8, 0, 7, 0, 3]) + b"a/b" + bytes([1])
    assert packets.unsubscribe(7, ["a/b"]) == bytes([0xA2, 7, 0, 7, 0, 3]) + b"a/b"
    unsuback = _read(bytes([0xB0, 2, 0, 7]))  # read and passed over by the client
    assert unsuback.kind == 0xB0


def test_topic_filters_match_like_a_broker():
    assert packets.matches("home/+/temp", "home/kitchen/temp")
    assert not packets.matches("home/+/temp", "home/kitchen/hall/temp")
    assert packets.matches("home/#", "home/a/b") and packets.matches("#", "x")
    assert not packets.matches("home/temp", "home/temp/x")
    packets.check_topic("home/+/x/#", wildcards=True)
    raises(ValueError, packets.check_topic, "home/#/x", True)
    raises(ValueError, packets.check_topic, "home/a+b", True)
    raises(ValueError, packets.check_topic, "home/+")
    raises(ValueError, packets.check_topic, "")


def test_requests_are_json_or_plain_text():
    request = messages.parse_request(b'{"text": " hi ", "reply_to": "home/ans", "id": 7, "from": "hall"}')
    assert request == {"text": "hi", "reply_to": "home/ans", "id": "7", "from": "hall"}
    assert messages.parse_request("Licht an?".encode())["text"] == "Licht an?"
    assert messages.parse_request(b'{"message": "from a notify service"}')["text"] == "from a notify service"
    assert "no text" in str(raises(ValueError, messages.parse_request, b'{"txt": 1}'))
    assert "wildcard" in str(raises(ValueError, messages.parse_request, b'{"text": "a", "reply_to": "x/#"}'))
    raises(ValueError, messages.parse_request, b'{"text": "a", "from": "Not An Id"}')
    raises(ValueError, messages.parse_request, b"\xff\xfe")
    raises(ValueError, messages.parse_request, b"pizza \xed\xa0\xbc\xed\xbd\x95")  # halves, not UTF-8
    assert messages.parse_request(b'{"text": "pizza \\ud83c\\udf55"}')["text"] == "pizza \U0001f355"
    raises(ValueError, messages.parse_request, ("x" * (messages.TEXT_MAX + 1)).encode())


def test_discovery_configs_group_one_device():
    found = list(discovery.configs("homeassistant", "kitchen", "mimi/kitchen"))
    assert len(found) == len(discovery.topics("homeassistant", "kitchen")) == 8
    for topic, config in found:
        assert topic.startswith("homeassistant/") and topic.endswith("/config")
        assert config["device"]["identifiers"] == ["mimi_kitchen"]
        assert ("state_topic" in config) != ("command_topic" in config)
        json.dumps(config)


def _free_port():
    import socket

    s = socket.socket()
    s.bind(socket.getaddrinfo("127.0.0.1", 0)[0][-1])
    port = s.getsockname()[1] if hasattr(s, "getsockname") else None
    s.close()
    return port or 18931


async def _accept(reader, writer):
    """A fake broker's side of the handshake: the client's CONNECT read, CONNACK accepted."""
    await packets.read(reader)
    writer.write(bytes([0x20, 2, 0, 0]))
    await writer.drain()


async def _linger_and_close(writer):
    """A fake broker's goodbye: time for the client's last packets, then the connection closed."""
    await asyncio.sleep(0.2)
    writer.close()
    await writer.wait_closed()


async def _stop(client, serving, server):
    """The client closed (its serving task ends, however), then the fake broker."""
    await client.close()
    try:
        await serving
    except Exception:
        pass
    server.close()
    await server.wait_closed()


def test_after_reconnecting_the_board_says_online_before_the_answers_that_waited():
    seen = []

    async def handle(reader, writer):
        await _accept(reader, writer)
        for _ in range(2):
            packet = await packets.read(reader)
            seen.append((packet.topic, packet.payload, bool(packet.flags & 0x08)))
            writer.write(packets.puback(packet.pid))
            await writer.drain()
        await _linger_and_close(writer)

    port = _free_port()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        client = Client(None)
        await client.publish("mimi/k/out", b"answer", 1)  # written while the broker was away: it waits
        assert client.pending and not client.connected
        await client.connect("127.0.0.1", port, None, "c", 30, first=("mimi/k/availability", b"online", True))
        serving = asyncio.create_task(client.serve(30))
        for _ in range(100):
            if not client.pending:
                break
            await asyncio.sleep(0.02)
        await _stop(client, serving, server)
        return client.pending

    assert run(main()) == []
    # online first (a subscriber never sees an answer from a board it still thinks offline), then the answer
    assert seen == [("mimi/k/availability", b"online", False), ("mimi/k/out", b"answer", False)], seen


def test_the_client_resends_an_unacknowledged_qos1_message_with_dup_after_reconnecting():
    seen = []

    async def handle(reader, writer):
        await _accept(reader, writer)
        packet = await packets.read(reader)
        seen.append((packet.topic, packet.payload, packet.flags & 0x08))
        if len(seen) == 1:  # the first connection drops without a PUBACK
            writer.close()
            await writer.wait_closed()  # MicroPython closes the socket here
            return
        writer.write(packets.puback(packet.pid))
        await writer.drain()
        await _linger_and_close(writer)

    port = _free_port()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        client = Client(None)
        await client.connect("127.0.0.1", port, None, "c", 30)
        pid = await client.publish("mimi/k/out", b"answer", 1)
        try:
            await client.serve(30)
        except EOFError:
            pass
        assert client.pending and not client.connected
        await client.connect("127.0.0.1", port, None, "c", 30)
        serving = asyncio.create_task(client.serve(30))
        assert await client.acked(pid, 3)
        assert not client.pending
        await _stop(client, serving, server)

    run(main())
    assert seen == [("mimi/k/out", b"answer", 0), ("mimi/k/out", b"answer", 0x08)]


def test_a_refused_login_says_why():
    async def handle(reader, writer):
        await packets.read(reader)
        writer.write(bytes([0x20, 2, 0, 4]))
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    port = _free_port()

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        try:
            await Client(None).connect("127.0.0.1", port, None, "c", 30, "u", "wrong")
        except Refused as exc:
            return exc
        finally:
            server.close()

    refused = run(main())
    assert refused.code == 4 and "wrong user name or password" in str(refused)


def test_unacknowledged_messages_are_bounded_by_count_and_bytes():
    from mimi.mqtt import client as client_module

    client = Client(None)  # not connected: everything waits

    async def main():
        for n in range(client_module.INFLIGHT_MAX + 3):
            await client.publish("t", b"x", 1)
        assert len(client.pending) == client_module.INFLIGHT_MAX and client.dropped == 3
        big = b"y" * (client_module.INFLIGHT_BYTES_MAX // 2)
        await client.publish("t", big, 1)
        await client.publish("t", big, 1)
        assert sum(len(e[2]) for e in client.pending) <= client_module.INFLIGHT_BYTES_MAX
        assert client.pending[-1][2] == big

    run(main())
