# A small MQTT 3.1.1 client on asyncio streams: TCP or verified TLS, keep-alive, QoS 0/1, resend after reconnect.
# Why not a kept one: micropython-lib's umqtt.simple blocks the whole event loop on every socket call, and
# the asyncio clients on PyPI are 1000+ lines with their own WiFi handling, f-strings or unverified TLS.
# This one shares the firmware's TLS context (CA-checked, host name checked) and bounds every buffer.
import asyncio

from mimi import platform
from mimi.mqtt import packets
from mimi.net import connect
from mimi.platform import const

INFLIGHT_MAX = const(16)  # QoS 1 messages kept until the broker acknowledges them (oldest given up first)
INFLIGHT_BYTES_MAX = const(32768)  # ... and their payloads together (a long reply is several KB)
CONNECT_TIMEOUT_S = const(15)  # TCP, TLS and CONNACK together
_WRITE_TIMEOUT_S = const(10)
_SUBACK_TIMEOUT_S = const(10)
_SUBACK_FAILURE = const(0x80)
_CLOSE_TIMEOUT_S = const(2)


class MQTTError(Exception):
    """A connection that failed or ended; the text is meant for the console."""


class Refused(MQTTError):
    """CONNACK with a non-zero return code."""

    def __init__(self, code):
        super().__init__(packets.REFUSALS.get(code, "the broker refused the connection (code {})".format(code)))
        self.code = code


def reason(exc, host):
    """What went wrong with a connection, in words."""
    if isinstance(exc, MQTTError):
        return str(exc)
    if isinstance(exc, EOFError):
        return "the broker closed the connection"
    if isinstance(exc, asyncio.TimeoutError):
        return "no answer from {} in time".format(host)
    return connect.explain(exc, host)


class Client:
    """connect(), then serve() until the connection ends; publish() and subscribe() from any task."""

    def __init__(self, on_message):
        # async fn(topic, payload (None when too big), retained, ack) -> True when it acknowledges later itself
        # with ack() (a QoS 1 message the agent still has to answer); ack is (pid, connection number) or None
        self.on_message = on_message
        self.connections = 0  # numbers the connections: a late ack() for an older one is not sent
        self.reader = self.writer = None
        self.connected = False
        self.pending = []  # [pid, topic, payload, retain, sent] of QoS 1 messages, oldest first
        self.dropped = 0  # QoS 1 messages given up because INFLIGHT_MAX (or _BYTES_MAX) were waiting
        self._pid = 0
        self._lock = asyncio.Lock()  # one packet written at a time
        self._acked = asyncio.Event()
        self._subacks = {}  # pid -> granted codes (bytes) or None while waiting
        self.received_ms = 0
        self._serving = False  # serve() reads the connection: a goodbye lets it read until the broker closes
        self._ended = asyncio.Event()

    def _next_pid(self):
        self._pid = self._pid % 65535 + 1
        return self._pid

    async def connect(self, host, port, context, client_id, keepalive, user=None, password=None, will=None,
                      clean=False, first=None):
        """Open the connection and log in; Refused or another exception when it fails. Resends unacknowledged
        QoS 1 messages (DUP set on those already sent), after `first` ((topic, payload, retain), QoS 1) when
        given: a board's "online" comes before the answers that waited for the broker."""
        await self.close()
        opening = connect.open_stream(host, port, context)
        self.reader, self.writer = await asyncio.wait_for(opening, CONNECT_TIMEOUT_S)
        platform.tcp_nodelay(self.writer)  # small packets (PUBACK, then the reply) must not wait on delayed ACKs
        try:
            await self._write(packets.connect(client_id, keepalive, user, password, will, clean))
            ack = await asyncio.wait_for(packets.read(self.reader), CONNECT_TIMEOUT_S)
            if ack.kind != packets.CONNACK or len(ack.codes) < 2:
                raise MQTTError("the broker did not answer CONNECT with CONNACK")
            if ack.codes[1]:
                raise Refused(ack.codes[1])
        except BaseException:
            await self.close()
            raise
        self.connected = True
        self.connections += 1
        waiting = list(self.pending)
        if first is not None:
            await self.publish(first[0], first[1], 1, first[2])
        for entry in waiting:
            await self._send_pending(entry)
        return bool(ack.codes[0] & 1)  # session present

    async def _write(self, data):
        async with self._lock:
            self.writer.write(data)
            await asyncio.wait_for(self.writer.drain(), _WRITE_TIMEOUT_S)

    async def _send_pending(self, entry):
        pid, topic, payload, retain, sent = entry
        done = await self.send(packets.publish(topic, payload, 1, retain, pid, dup=sent))
        entry[4] = sent or done
        return done

    async def send(self, data):
        """Write one packet; False (and the connection closed) when it cannot be written."""
        if not self.connected:
            return False
        try:
            await self._write(data)
            return True
        except Exception:
            await self.close()
            return False

    async def publish(self, topic, payload, qos=0, retain=False):
        """QoS 0: sent now or never (False). QoS 1: kept until acknowledged, sent now or after the next
        connect; returns its packet id."""
        if not qos:
            return await self.send(packets.publish(topic, payload, 0, retain))
        held = len(payload)
        for entry in self.pending:
            held += len(entry[2])
        while self.pending and (len(self.pending) >= INFLIGHT_MAX or held > INFLIGHT_BYTES_MAX):
            gone = self.pending.pop(0)
            held -= len(gone[2])
            self.dropped += 1
            platform.log("mqtt: gave up an unacknowledged message to {} (at most {} messages or {} bytes wait for "
                  "the broker)".format(gone[1], INFLIGHT_MAX, INFLIGHT_BYTES_MAX))
        entry = [self._next_pid(), topic, payload, retain, False]
        self.pending.append(entry)
        await self._send_pending(entry)
        return entry[0]

    async def acked(self, pid, seconds):
        """True once the broker acknowledged QoS 1 message pid, False after `seconds`."""
        try:
            await asyncio.wait_for(self._until_acked(pid), seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def _until_acked(self, pid):
        while any(entry[0] == pid for entry in self.pending):
            self._acked.clear()
            await self._acked.wait()

    async def ack(self, ack):
        """Acknowledge a QoS 1 message handled later; an ack for an older connection is dropped (the broker
        sends that message again after reconnecting)."""
        if ack is not None and ack[1] == self.connections:
            await self.send(packets.puback(ack[0]))

    async def subscribe(self, topics):
        """Subscribe to [(filter, qos)]; the granted codes (0x80: refused), or None without an answer."""
        pid = self._next_pid()
        self._subacks[pid] = None
        try:
            if not await self.send(packets.subscribe(pid, topics)):
                return None
            for _ in range(_SUBACK_TIMEOUT_S * 10):
                if self._subacks[pid] is not None:
                    return self._subacks[pid]
                await asyncio.sleep(0.1)
            return None
        finally:
            self._subacks.pop(pid, None)

    async def unsubscribe(self, filters):
        """Unsubscribe from [filter]; False when it could not be sent (its UNSUBACK is not waited for)."""
        return await self.send(packets.unsubscribe(self._next_pid(), filters))

    async def serve(self, keepalive):
        """Read packets until the connection ends (its reason as an exception); pings every keepalive/2."""
        pinger = asyncio.create_task(self._ping(keepalive))
        self._serving = True
        self._ended.clear()
        try:
            while True:  # until the connection fails or ends (closed by either side)
                packet = await asyncio.wait_for(packets.read(self.reader), keepalive + keepalive // 2 + 1)
                if self.connected:
                    await self._handle(packet)
                # else: after our DISCONNECT, read and dropped until the broker closes (see close)
        finally:
            self._serving = False
            self._ended.set()
            pinger.cancel()
            await self.close()

    async def _ping(self, keepalive):
        while self.connected:
            await asyncio.sleep(max(1, keepalive // 2))
            await self.send(packets.pingreq())

    async def _handle(self, packet):
        kind = packet.kind
        if kind == packets.PUBLISH:
            ack = (packet.pid, self.connections) if packet.qos else None
            later = await self.on_message(packet.topic, packet.payload, packet.retain, ack)
            if ack is not None and not later:
                await self.send(packets.puback(packet.pid))
        elif kind == packets.PUBACK:
            self.pending[:] = [entry for entry in self.pending if entry[0] != packet.pid]
            self._acked.set()
        elif kind == packets.SUBACK:
            if packet.pid in self._subacks:
                self._subacks[packet.pid] = packet.codes

    async def close(self, graceful=False):
        """Close the connection; graceful sends DISCONNECT first (the broker then keeps the will to itself)."""
        writer, self.writer = self.writer, None
        was = self.connected
        self.connected = False
        if writer is None:
            return
        if graceful and was:
            try:
                await asyncio.wait_for(self._goodbye(writer), _CLOSE_TIMEOUT_S)
            except Exception:
                pass
        try:
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), _CLOSE_TIMEOUT_S)
        except Exception:
            pass

    async def _goodbye(self, writer):
        async with self._lock:  # after the packet being written, if any
            writer.write(packets.disconnect())
            await writer.drain()
        # The broker closes once it has read DISCONNECT. Closing first, with packets it sent meanwhile still
        # unread (a message on a subscription), resets the connection: the broker may lose the DISCONNECT and
        # publish the will. serve() reads them until the broker's end.
        if self._serving:
            await self._ended.wait()
