# The `mqtt` channel: messages on mimi/<id>/in reach the agent with the owner's chosen role; replies, the
# retained state and availability, Home Assistant discovery, messages to other boards, watched topics.
import asyncio

from mimi import jsontext, mqtt, platform, utf8
from mimi.bus.message import MQTT, Message
from mimi.channels import Channel
from mimi.channels.system import CONSOLE_TARGET
from mimi.health import memory_errors
from mimi.mqtt import messages, packets, presence
from mimi.mqtt.client import Client, Refused, reason
from mimi.net.backoff import Backoff
from mimi.platform import const, log
from mimi.safety import roles

CHANNEL = MQTT
RETRY_FIRST_S = const(1)
RETRY_MAX_S = const(60)
_REFUSED_RETRY_S = const(300)  # after a wrong password: the owner has to act, so try seldom
_SEEN_IDS = const(16)  # request ids remembered, so a QoS 1 message delivered twice is answered once
ASKS_MAX = const(8)  # questions to other boards whose answers we still route back
_WATCHED_MAX = const(8)  # topics watchers read
_FIRST_READING_S = const(2)  # a new watched topic: how long to wait for its retained value
_ACK_WAIT_S = const(5)
_RESTART_KEYS = ("host", "port", "user", "password", "tls", "device_id", "keepalive")


class MQTT(Channel):
    """Service (run) and channel (send) in one; app.part("mqtt") (parts.py adds it to the app's channels)."""

    name = CHANNEL

    def __init__(self, app):
        self.app = app
        self.client = Client(self._on_message)
        self.running = False  # connected or trying to, while a broker is set
        self.where = None  # "host:port" while connected
        self.where_base = None  # the base topic of that connection (mqtt_id may change it)
        self.error = None  # the last connection problem, for mqtt_status
        self.last_error = ""  # the last error a user was shown (in the state)
        self.last_reply = ""
        self.recalling = asyncio.Event()  # until the retained state was read once (presence.recall_state)
        self.received = self.answered = 0
        self._seen = []
        self._asks = []  # [ask id, (channel, chat_id)] of messages sent to other boards
        self._ask_no = 0
        self.watched = {}  # topic filter -> (topic, text, ticks_ms) of its newest message, or None
        self._wake = asyncio.Event()
        self._restart = False
        self._probe = None  # [the test message sent to our own `in` after connecting, came back]
        self._greeting = None  # the task of presence.online, beside serve(), while it runs
        self._greeting_failed = None  # why it failed, when it did: the connection's end
        app.config.subscribe(self._on_config)
        commands = app.console.commands
        self._status = commands.entry("status")[0]  # the gateway's line names it (gateway/server.py)
        commands.add("status", self.cmd_status, "status", 0, 0, "what is configured, connected and running")

    async def cmd_status(self):
        await self._status()
        platform.console_write("  MQTT: {}\n".format(
            "connected to {} as {}".format(self.where, self.base()) if self.client.connected
            else "off" if not mqtt.configured(self.app.config) else "not connected ({})".format(
                self.error or "connecting")))

    # -- settings --
    def setting(self, key):
        return self.app.config.get(mqtt.NS, key)

    def device_id(self):
        return mqtt.device_id(self.app.config)

    def base(self):
        return mqtt.base(self.app.config)

    def role(self):
        role = self.setting("role")
        return role if role in roles.ROLES else roles.OBSERVER

    def port(self):
        return self.setting("port") or (8883 if self.setting("tls") else 1883)

    def _on_config(self, ns, key):
        if ns != mqtt.NS:
            return
        if key in _RESTART_KEYS:
            self._restart = True
            self._wake.set()
            if self.client.connected:
                asyncio.create_task(self._leave())  # the run loop connects again with the new settings
        elif key in ("discovery", "ha_prefix") and self.client.connected:
            asyncio.create_task(presence.announce(self))

    async def _leave(self):
        greeting, self._greeting = self._greeting, None
        if greeting is not None:  # still subscribing or waiting for the retained state: cut short (done: no-op)
            greeting.cancel()
            try:
                await greeting
            except asyncio.CancelledError:
                pass
        base = self.where_base
        await presence.availability(self, False, base)
        if base and base != self.base():  # renamed (mqtt_id): Home Assistant forgets the old device
            await presence.announce(self, base[len(mqtt.BASE_PREFIX):], remove=True)
        await self.client.close(graceful=True)

    # -- the service --
    async def run(self):
        """The task, for the rest of the boot: connected while a broker is set; mqtt_off idles it, mqtt_set wakes it."""
        while True:
            try:
                if mqtt.configured(self.app.config):
                    self.running = True
                    try:
                        await self._run()
                    finally:
                        self.running = False
                self._wake.clear()
                await self._wake.wait()  # a setting changed (_on_config)
            except MemoryError as exc:  # told once an hour, and the loop goes on (health/memory_errors.py)
                memory_errors.short("mqtt", exc)
                await asyncio.sleep(memory_errors.AGAIN_S)

    async def _run(self):
        backoff = Backoff(RETRY_FIRST_S, RETRY_MAX_S)
        states = asyncio.create_task(memory_errors.lasting("mqtt", presence.periodic, self))
        await self.app.wifi.up.wait()
        try:
            while mqtt.configured(self.app.config):
                self._restart = False
                wait = await self._session(backoff)
                if wait and not self._restart:
                    await self._sleep(wait)
        finally:
            states.cancel()
        log("mqtt: off")

    async def _session(self, backoff):
        """One connection from connect to loss; the seconds to wait before the next try (0: at once)."""
        host, port = self.setting("host"), self.port()
        context = None
        if self.setting("tls"):
            from mimi.net import ntp, tls

            if not ntp.synced():
                self.error = "the clock is not set yet (NTP), so the broker's certificate cannot be checked"
                log("mqtt: cannot connect to {}:{}: {}".format(host, port, self.error))
                return backoff.next()
            context = tls.context()
        base = self.base()
        will = (base + "/availability", b"offline", 1, True)
        keepalive = self.setting("keepalive")
        try:
            await self.client.connect(host, port, context, "mimi-" + self.device_id(), keepalive,
                                      self.setting("user"), self.setting("password"), will,
                                      first=(base + "/availability", b"online", True))
        except Exception as exc:
            self.error = reason(exc, host)
            refused = isinstance(exc, Refused) and exc.code in packets.AUTH_CODES
            wait = _REFUSED_RETRY_S if refused else backoff.next()
            log("mqtt: cannot connect to {}:{}: {}; trying again in {} s".format(host, port, self.error, wait))
            return wait
        backoff.reset()
        self.where, self.error, self.where_base = "{}:{}".format(host, port), None, base
        if self._restart:  # the settings changed (or mqtt_off) while connecting
            await self._leave()
            return 0
        log("mqtt: connected to {} as {}{}".format(self.where, base, " (TLS)" if context else ""))
        serving = asyncio.create_task(self.client.serve(keepalive))
        self._greeting_failed = None
        self._greeting = asyncio.create_task(self._greet(host))
        try:
            await serving  # awaited at once: its end is never an unretrieved task exception
            problem = "the connection closed"
        except Exception as exc:
            problem = reason(exc, host)
        finally:
            serving.cancel()
            if self._greeting is not None:
                self._greeting.cancel()
                self._greeting = None
        problem = self._greeting_failed or problem
        if not self._restart:
            self.error = problem
            log("mqtt: connection to {} lost: {}; reconnecting".format(self.where, problem))
        self.where = None
        return 0 if self._restart else backoff.next()

    async def _sleep(self, seconds):
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _greet(self, host):
        """Subscriptions, discovery and the state (presence.online) beside serve(); a goodbye (_leave) cuts
        it short, and its failure closes the connection to make it again."""
        try:
            await presence.online(self)
        except Exception as exc:
            self._greeting_failed = reason(exc, host)
            await self.client.close()

    async def publish_state(self):
        await presence.publish_state(self)

    def new_probe(self):
        """A new test message for our own `in` (presence.check_inbox); probe_back() says when it came back."""
        self._probe = [messages.encode({"probe": str(platform.ticks_ms())}).encode(), False]
        return self._probe[0]

    def probe_back(self):
        return self._probe is not None and self._probe[1]

    # -- incoming --
    async def _on_message(self, topic, payload, retained, ack):
        """True when the message is acknowledged later: a request, once its answer is out."""
        base = self.base()
        later = False
        if payload is None:
            log("mqtt: skipped a message on {} over {} bytes".format(topic, packets.PACKET_MAX))
        elif topic == base + "/in":
            if retained:  # it would run again at every connect
                log("mqtt: ignored a retained message on {} (publish requests without retain)".format(topic))
            else:
                later = await self._request(payload, ack)
        elif topic == base + "/reply":
            await self._board_answer(payload)
        elif topic == base + "/state" and retained and self.recalling is not None and payload is not None:
            self._remember(payload)
        for topic_filter in self.watched:
            if payload is not None and packets.matches(topic_filter, topic):
                text = utf8.valid_text(bytes(payload[: utf8.boundary(payload[:messages.STATE_TEXT_MAX])]))
                self.watched[topic_filter] = (topic, text, platform.ticks_ms())
        return later

    def _remember(self, payload):
        """The retained state this board published before it restarted: its last reply and error, unless a
        newer one came since."""
        try:
            state = jsontext.loads(utf8.valid_text(bytes(payload)))
        except ValueError:
            state = None
        if not isinstance(state, dict):
            state = {}
        for key in ("last_reply", "last_error"):
            if isinstance(state.get(key), str) and not getattr(self, key):
                setattr(self, key, state[key])
        self.recalling.set()

    async def _request(self, payload, ack=None):
        """Queue a request for the agent; True when its acknowledgement waits for the answer (a reset
        before then makes the broker deliver it again)."""
        if self._probe is not None and payload == self._probe[0]:
            self._probe[1] = True
            return False
        try:
            request = messages.parse_request(payload)
        except ValueError as exc:
            log("mqtt: ignored a message on {}/in: {}".format(self.base(), exc))
            await self._out({"kind": "error", "text": "not understood: {}".format(exc)})
            return False
        reply_to = request["reply_to"]
        if reply_to is not None and not self._may_answer_on(reply_to):
            log("mqtt: refused a message asking for its answer on {}".format(reply_to))
            await self._out({"kind": "error", "id": request["id"], "text": "reply_to must be a topic under "
                             "{} or one the owner allowed with mqtt_allow".format(mqtt.BASE_PREFIX)})
            return False
        rid = request["id"]
        if rid is not None:
            key = (request["from"], rid)
            if key in self._seen:
                return False  # a QoS 1 message delivered again: answered once already
            self._seen.append(key)
            del self._seen[:-_SEEN_IDS]
        self.received += 1
        chat_id = request["from"] or self.device_id()  # a board's messages are its own chat
        meta = {"mqtt": True, "role": self.role(), "reply_to": request["reply_to"], "id": rid,
                "from": request["from"], "ack": ack}
        await self.app.bus.inbound.put(Message(CHANNEL, chat_id, request["text"], meta))
        return ack is not None

    def _may_answer_on(self, topic):
        # The board's broker user may write more than the sender may: its answers go only where the owner
        # said (mqtt_allow) or under mimi/ (another board's reply topic, this board's own topics).
        from mimi.mqtt import tool

        return topic.startswith(mqtt.BASE_PREFIX) or tool.allowed(self.app.config, topic)

    async def _board_answer(self, payload):
        try:
            answer = messages.parse_request(payload)
        except ValueError as exc:
            log("mqtt: ignored an answer on {}/reply: {}".format(self.base(), exc))
            return
        asker = CONSOLE_TARGET
        for entry in self._asks:
            if entry[0] == answer["id"]:
                asker = entry[1]
                self._asks.remove(entry)
                break
        text = "board {} answered: {}".format(answer["from"] or "?", answer["text"])
        if asker[0] not in self.app.channels:
            asker = CONSOLE_TARGET
        await self.app.bus.outbound.put(Message(asker[0], asker[1], text, {"kind": "notice"}))

    # -- outgoing: the channel --
    async def send(self, message):
        meta = message.meta
        request = meta.get("request") or {}
        kind = meta.get("kind") or "reply"
        if kind in ("error", "refused"):
            self.last_error = message.content
        if request.get("mqtt"):  # the answer to a message on `in`
            body = {"text": message.content, "kind": kind, "from": self.device_id(), "chat": message.chat_id}
            if request.get("id") is not None:
                body["id"] = request["id"]
            if kind == "reply":
                self.last_reply = message.content
            self.answered += 1
            await self.client.publish(request.get("reply_to") or self.base() + "/out", messages.encode(body), 1)
            await self.client.ack(request.get("ack"))  # the answer is on its way: the request is done
            await self.publish_state()
        elif request.get("source") == "send_message" and message.chat_id != self.device_id():
            await self._to_board(message.chat_id, message.content, request.get("asker"))
        else:  # a notice, a report or a scheduled answer: on `out`
            await self._out({"text": message.content, "kind": kind, "chat": message.chat_id})

    async def _out(self, body):
        body["from"] = self.device_id()
        await self.client.publish(self.base() + "/out", messages.encode(body), 1)

    async def _to_board(self, board, text, asker):
        self._ask_no += 1
        ask_id = "{}-{}".format(self.device_id(), self._ask_no)
        self._asks.append([ask_id, tuple(asker) if asker else CONSOLE_TARGET])
        del self._asks[:-ASKS_MAX]
        body = {"text": text, "from": self.device_id(), "reply_to": self.base() + "/reply", "id": ask_id}
        await self.client.publish(mqtt.BASE_PREFIX + board + "/in", messages.encode(body), 1)

    async def publish(self, topic, payload, retain=False):
        """The mqtt_publish tool: True once the broker acknowledged, False if not yet, None without a connection."""
        if not self.client.connected:
            return None
        pid = await self.client.publish(topic, payload, 1, retain)
        return await self.client.acked(pid, _ACK_WAIT_S)

    # -- watchers (source mqtt:<topic>) --
    async def reading(self, topic_filter):
        """(topic, text, age in s) of the newest message on a watched topic; ValueError when there is none."""
        if topic_filter not in self.watched:
            if len(self.watched) >= _WATCHED_MAX:
                raise ValueError("at most {} MQTT topics can be watched".format(_WATCHED_MAX))
            self.watched[topic_filter] = None
            if self.client.connected:
                codes = await self.client.subscribe([(topic_filter, 1)])
                if codes and codes[0] == 0x80:
                    del self.watched[topic_filter]
                    raise ValueError("the broker refused the subscription to {} (ACL)".format(topic_filter))
                for _ in range(_FIRST_READING_S * 10):  # a retained value arrives at once
                    if self.watched.get(topic_filter) is not None:
                        break
                    await asyncio.sleep(0.1)
        newest = self.watched.get(topic_filter)
        if newest is None:
            raise ValueError("no message on {} yet{}".format(
                topic_filter, "" if self.client.connected else " (not connected to the broker)"))
        return newest[0], newest[1], platform.ticks_diff(platform.ticks_ms(), newest[2]) // 1000
