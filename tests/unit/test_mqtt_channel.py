# The MQTT channel's routing with a recording client: requests to the bus, answers to out or reply_to,
# other boards, duplicates, the inbox check, the state. (The broker itself: tests/e2e/test_mqtt.py.)
import json

from stub_app import stub_app
from support import remove_tree, run

from mimi.bus.message import Message


class RecordingClient:
    def __init__(self):
        self.connected = True
        self.published = []  # (topic, payload, qos, retain)
        self.acks = []
        self.pending = []

    async def publish(self, topic, payload, qos=0, retain=False):
        self.published.append((topic, payload, qos, retain))
        return len(self.published)

    async def ack(self, ack):
        if ack is not None:
            self.acks.append(ack)

    def on(self, topic):
        return [json.loads(p[1]) for p in self.published if p[0] == topic]


def _channel(role=None):
    from mimi.mqtt.channel import MQTT

    app = stub_app("mqtt")
    app.started_ms = 0
    app.config.set("mqtt_config", "device_id", "kitchen")
    if role:
        app.config.set("mqtt_config", "role", role)
    channel = MQTT(app)
    channel.client = RecordingClient()
    return app, channel


def test_a_request_reaches_the_bus_with_the_owners_role_and_waits_for_its_answer_to_be_acked():
    app, ch = _channel()
    try:
        later = run(ch._on_message("mimi/kitchen/in", b'{"text": "hi", "id": "q1"}', False, (5, 1)))
        assert later is True and ch.client.acks == []
        message = app.bus.inbound.get_nowait()
        assert (message.channel, message.chat_id, message.content) == ("mqtt", "kitchen", "hi")
        assert message.meta["role"] == "observer" and message.meta["ack"] == (5, 1)
        reply = Message("mqtt", "kitchen", "Hello.", {"kind": "reply", "request": message.meta})
        run(ch.send(reply))
        assert ch.client.on("mimi/kitchen/out") == [
            {"text": "Hello.", "kind": "reply", "from": "kitchen", "chat": "kitchen", "id": "q1"}]
        assert ch.client.acks == [(5, 1)]  # acknowledged once the answer is out
        state = ch.client.on("mimi/kitchen/state")[-1]
        assert state["last_reply"] == "Hello." and state["online"] is True
    finally:
        remove_tree(app.top)


def test_a_duplicate_is_acked_at_once_and_not_asked_again():
    app, ch = _channel("operator")
    try:
        run(ch._on_message("mimi/kitchen/in", b'{"text": "hi", "id": "q1", "from": "hall"}', False, (5, 1)))
        assert app.bus.inbound.get_nowait().meta["role"] == "operator"
        assert run(ch._on_message("mimi/kitchen/in", b'{"text": "hi", "id": "q1", "from": "hall"}', False,
                                  (6, 2))) is False
        assert app.bus.inbound.empty()
    finally:
        remove_tree(app.top)


def test_reply_to_goes_only_under_mimi_or_where_the_owner_allowed():
    app, ch = _channel()
    try:
        run(ch._on_message("mimi/kitchen/in", b'{"text": "a", "reply_to": "home/lamp/set", "id": 1}', False, None))
        assert app.bus.inbound.empty() and ch.client.on("mimi/kitchen/out")[0]["kind"] == "error"
        app.config.set("mqtt_config", "publish_allow", "home/#")
        run(ch._on_message("mimi/kitchen/in", b'{"text": "a", "reply_to": "home/lamp/set", "id": 2}', False, None))
        message = app.bus.inbound.get_nowait()
        run(ch.send(Message("mqtt", "kitchen", "ok", {"kind": "reply", "request": message.meta})))
        assert ch.client.on("home/lamp/set")[0]["text"] == "ok"
    finally:
        remove_tree(app.top)


def test_messages_to_another_board_come_back_to_the_chat_that_asked():
    app, ch = _channel()
    try:
        meta = {"kind": "reply", "request": {"source": "send_message", "asker": ("websocket", "ws_1")}}
        run(ch.send(Message("mqtt", "hall", "door locked?", meta)))
        sent = ch.client.on("mimi/hall/in")[0]
        assert sent["reply_to"] == "mimi/kitchen/reply" and sent["from"] == "kitchen"
        answer = json.dumps({"text": "yes", "from": "hall", "id": sent["id"]}).encode()
        run(ch._on_message("mimi/kitchen/reply", answer, False, (9, 1)))
        notice = app.bus.outbound.get_nowait()
        assert (notice.channel, notice.chat_id, notice.content) == ("websocket", "ws_1", "board hall answered: yes")
        assert app.bus.inbound.empty()  # never a new turn for this board's agent: no loops between boards
    finally:
        remove_tree(app.top)


def test_the_inbox_check_is_consumed_and_bad_or_retained_requests_are_not_asked():
    app, ch = _channel()
    try:
        probe = ch.new_probe()
        assert not ch.probe_back()
        run(ch._on_message("mimi/kitchen/in", probe, False, (1, 1)))
        assert ch.probe_back() is True
        run(ch._on_message("mimi/kitchen/in", b'{"text": "x"}', True, None))  # retained: would rerun each boot
        run(ch._on_message("mimi/kitchen/in", b"{oops", False, None))  # not JSON: an error on out
        assert app.bus.inbound.empty()
        assert [d["kind"] for d in ch.client.on("mimi/kitchen/out")] == ["error"]
    finally:
        remove_tree(app.top)


def test_a_watched_topic_keeps_its_newest_message():
    app, ch = _channel()
    try:
        ch.watched["home/+/temp"] = None
        run(ch._on_message("home/hall/temp", b"21.5", True, None))
        topic, value, age = run(ch.reading("home/+/temp"))
        assert (topic, value) == ("home/hall/temp", "21.5") and age >= 0
    finally:
        remove_tree(app.top)
