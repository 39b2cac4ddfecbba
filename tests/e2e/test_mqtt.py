# The MQTT channel against a real Mosquitto broker (password file, ACL, TLS with the test CA), both runtimes.
import json
import re
import shutil
import signal
import threading
import time

import pytest

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY, free_port
from tests.mosquitto import INSTALL_HINT, USERS, Broker, find

paho = pytest.importorskip("paho.mqtt.client")

# What Home Assistant's MQTT schemas require per component (homeassistant/components/mqtt/<component>.py).
HA_REQUIRED = {"sensor": ("state_topic",), "text": ("command_topic",), "notify": ("command_topic",)}
HA_UNITS = {"data_size": ("B", "kB", "KiB", "MB", "MiB"), "duration": ("s", "min", "h", "d", "ms"),
            "signal_strength": ("dB", "dBm")}
STATE_CLASSES = ("measurement", "total", "total_increasing")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    if find() is None:
        pytest.skip(INSTALL_HINT)
    server = Broker(tmp_path_factory.mktemp("mosquitto"))
    server.start()
    yield server
    server.stop()


class Watcher:
    """A plain MQTT client (paho) that records every message on its subscriptions, re-subscribing after drops."""

    def __init__(self, broker, user="ha", topics=("#",), client_id=None):
        self.messages = []
        self.lock = threading.Lock()
        self.topics = list(topics)
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id or "", clean_session=True)
        self.client.username_pw_set(user, USERS[user])
        self.client.on_message = self._on_message
        self.client.on_connect = self._on_connect
        self.connected = threading.Event()
        self.client.reconnect_delay_set(0.2, 1)
        self.client.connect("127.0.0.1", broker.port, keepalive=10)
        self.client.loop_start()
        assert self.connected.wait(10), "the test client could not connect"

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        for topic in self.topics:
            client.subscribe(topic, qos=1)
        time.sleep(0.1)
        self.connected.set()

    def _on_message(self, client, userdata, message):
        with self.lock:
            self.messages.append((message.topic, bytes(message.payload), bool(message.retain)))

    def publish(self, topic, payload, retain=False):
        data = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
        self.client.publish(topic, data, qos=1, retain=retain).wait_for_publish(10)

    def seen(self, topic):
        with self.lock:
            return [m for m in self.messages if m[0] == topic]

    def wait(self, topic, check=lambda data: True, timeout=30):
        """The first JSON (or text) payload on topic for which check() holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for _, payload, _ in self.seen(topic):
                try:
                    data = json.loads(payload)
                except ValueError:
                    data = payload.decode()
                if check(data):
                    return data
            time.sleep(0.05)
        raise AssertionError("nothing matching on {} within {} s; seen: {}".format(
            topic, timeout, [m for m in self.messages if m[0].startswith("mimi/")][-10:]))

    def last(self, topic, timeout=10):
        """The newest payload on topic (text), waiting for a first one."""
        deadline = time.monotonic() + timeout
        while not self.seen(topic) and time.monotonic() < deadline:
            time.sleep(0.05)
        found = self.seen(topic)
        assert found, "nothing on {}".format(topic)
        return found[-1][1].decode()

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture
def ha(broker):
    client = Watcher(broker)
    yield client
    client.stop()


def forget_session(broker, name, device_id=None):
    """The broker forgets what an earlier test's board of this name left: its session (boards keep theirs, so a
    message it had not acknowledged yet would reach this test's board) and its retained state (a test reading
    this board's first state would read that board's last)."""
    board = device_id or name
    client = Watcher(broker, name, topics=(), client_id="mimi-" + board)
    for topic in ("state", "availability"):
        client.publish("mimi/{}/{}".format(board, topic), b"", retain=True)  # an empty retained message clears
    client.stop()


def retained_devices(broker, wanted, seconds=20):
    """The devices whose discovery configs the broker keeps, as a Home Assistant starting now sees them: looked at
    until they are `wanted` or `seconds` have passed (the board publishes and removes them from a task of its own,
    after the command that asked has answered)."""
    deadline = time.monotonic() + seconds
    while True:
        fresh = Watcher(broker, topics=("homeassistant/#",))
        try:
            time.sleep(1.0)  # the retained configs come right after the subscription
            devices = set(m[0].split("/")[2] for m in fresh.messages if m[1])
        finally:
            fresh.stop()
        if devices == wanted or time.monotonic() > deadline:
            return devices


def connect_board(dev, broker, name, password=None, extra=(), device_id=None):
    if password is None:
        forget_session(broker, name, device_id)
    dev.command("set_api_key " + API_KEY)
    assert "mimi/{}/".format(device_id or name) in dev.command("mqtt_id " + (device_id or name))
    out = dev.command("mqtt_auth {} {}".format(name, password or USERS[name]))
    assert (password or USERS[name]) not in out
    for line in extra:
        dev.command(line)
    dev.command("mqtt_set 127.0.0.1 {}".format(broker.port))
    return dev


@pytest.fixture
def kitchen(boot, broker):
    dev = connect_board(boot(), broker, "kitchen")
    dev.expect(r"mqtt: connected to 127\.0\.0\.1:\d+ as mimi/kitchen", timeout=20)
    return dev


def test_a_message_on_in_is_answered_on_out_and_on_a_reply_topic(kitchen, ha, fake):
    fake.script(text("Hello from the kitchen board."), text("Answered where you asked."))
    ha.publish("mimi/kitchen/in", {"text": "hi board", "id": "q1"})
    answer = ha.wait("mimi/kitchen/out", lambda d: isinstance(d, dict) and d.get("id") == "q1")
    assert answer["text"] == "Hello from the kitchen board." and answer["kind"] == "reply"
    assert answer["from"] == "kitchen"
    assert "hi board" in json.dumps(fake.requests[-1]["body"]["messages"][-1])
    # A reply topic of the asker's choice: under mimi/, or one the owner allowed (the board's broker user
    # may write to topics the asker may not, like home/#).
    ha.publish("mimi/kitchen/in", {"text": "where?", "reply_to": "home/lamp/set", "id": 6})
    refusal = ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "6")
    assert refusal["kind"] == "error" and "mqtt_allow" in refusal["text"]
    assert ha.seen("home/lamp/set") == []
    ha.publish("mimi/kitchen/in", {"text": "where?", "reply_to": "mimi/kitchen/answers", "id": 7})
    answer = ha.wait("mimi/kitchen/answers", lambda d: d.get("id") == "7")
    assert answer["text"] == "Answered where you asked."


def test_bad_messages_get_a_clear_error_and_the_channel_goes_on(kitchen, ha, fake):
    ha.publish("mimi/kitchen/in", b'{"txt": "no text field"}')
    error = ha.wait("mimi/kitchen/out", lambda d: d.get("kind") == "error")
    assert "no text" in error["text"]
    kitchen.expect("mqtt: ignored a message on mimi/kitchen/in: the message has no text")
    fake.script(text("Still here."))
    ha.publish("mimi/kitchen/in", "plain text works")
    assert ha.wait("mimi/kitchen/out", lambda d: d.get("kind") == "reply")["text"] == "Still here."


def test_discovery_configs_are_retained_valid_and_removed_when_turned_off(kitchen, broker, ha):
    late = Watcher(broker, topics=("homeassistant/#",))  # joins afterwards: sees only what is retained
    try:
        deadline = time.monotonic() + 10
        while len(late.messages) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        configs = {m[0]: json.loads(m[1]) for m in late.messages
                   if m[2] and m[1] and m[0].split("/")[2] == "kitchen"}
    finally:
        late.stop()
    components = sorted(topic.split("/")[1] for topic in configs)
    assert components == ["notify"] + ["sensor"] * 6 + ["text"]
    unique = set()
    for topic, config in configs.items():
        prefix, component, node, object_id, last = topic.split("/")
        assert (prefix, node, last) == ("homeassistant", "kitchen", "config")
        assert re.fullmatch(r"[a-zA-Z0-9_-]+", object_id)  # Home Assistant's discovery topic pattern
        assert config["name"] and config["origin"]["name"]
        for key in HA_REQUIRED[component]:
            assert config[key].startswith("mimi/kitchen/") and "+" not in config[key] and "#" not in config[key]
        assert config["unique_id"] not in unique
        unique.add(config["unique_id"])
        assert config["device"]["identifiers"] == ["mimi_kitchen"] and config["device"]["name"]
        assert config["availability_topic"] == "mimi/kitchen/availability"
        if component == "sensor":
            field = config["value_template"].split("value_json.")[1].split("}")[0].strip()
            state = ha.wait("mimi/kitchen/state")
            assert field in state, field
            device_class = config.get("device_class")
            if device_class:
                assert config["unit_of_measurement"] in HA_UNITS[device_class]
            assert config.get("state_class", "measurement") in STATE_CLASSES
        if component == "text":
            assert 0 <= config["min"] <= config["max"] <= 255 and config["mode"] in ("text", "password")
    assert ha.last("mimi/kitchen/availability") == "online"
    assert "removed" in kitchen.command("mqtt_discovery off")
    assert retained_devices(broker, set()) == set()  # nothing retained: Home Assistant forgets the device
    # Renamed with discovery on: the new device appears, the old one goes.
    kitchen.command("mqtt_discovery on")
    kitchen.command("mqtt_id kitchen2")
    kitchen.expect("mqtt: connected to .* as mimi/kitchen2", timeout=20)
    try:
        assert retained_devices(broker, {"kitchen2"}) == {"kitchen2"}
    finally:
        kitchen.command("mqtt_discovery off")  # the broker outlives this test: leave no device behind
        retained_devices(broker, set())


def test_state_is_retained_and_updates_after_a_reply(kitchen, ha, fake):
    status = kitchen.command("status")  # each layer's line after the ones before it, the gateway's too
    assert status.index("Agent: ") < status.index("Gateway: listening") < status.index("MQTT: connected to 127.0.0.1")
    first = ha.wait("mimi/kitchen/state")
    assert first["online"] is True and first["uptime_s"] >= 0 and "tokens_today" in first and "rssi_dbm" in first
    fake.script(text("Counting tokens."))
    ha.publish("mimi/kitchen/in", {"text": "count", "id": "s1"})
    state = ha.wait("mimi/kitchen/state", lambda d: d.get("last_reply") == "Counting tokens.")
    assert state["tokens_today"] > (first["tokens_today"] or 0)


def test_a_restarted_board_keeps_its_last_reply_and_tokens_today(kitchen, boot, ha, fake):
    fake.script(text("Kept across a restart."))
    ha.publish("mimi/kitchen/in", {"text": "remember this", "id": "k1"})
    before = ha.wait("mimi/kitchen/state", lambda d: d.get("last_reply") == "Kept across a restart.")
    kitchen.stop()  # power gone: no graceful goodbye
    published = len(ha.seen("mimi/kitchen/state"))
    again = boot()
    again.pos = 0
    again.expect(r"mqtt: connected to 127\.0\.0\.1:\d+ as mimi/kitchen", timeout=20)
    deadline = time.monotonic() + 20
    while len(ha.seen("mimi/kitchen/state")) <= published and time.monotonic() < deadline:
        time.sleep(0.05)
    after = json.loads(ha.seen("mimi/kitchen/state")[published][1])  # the restarted board's first state
    assert after["last_reply"] == "Kept across a restart.", after
    assert after["tokens_today"] >= before["tokens_today"], (before, after)


def test_a_broker_restart_mid_conversation_loses_no_message(kitchen, broker, ha, fake):
    fake.script(text("A slow but certain answer.", chunk=5, delay=0.4))
    ha.publish("mimi/kitchen/in", {"text": "think slowly", "id": "r1"})
    fake.wait_requests(1, timeout=10)
    broker.restart(down_s=1.0)  # the reply is written while the broker is away
    kitchen.expect("mqtt: connection to 127.0.0.1:\\d+ lost", timeout=30)
    kitchen.expect("mqtt: connected to 127.0.0.1:\\d+ as mimi/kitchen", timeout=30)
    answer = ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "r1", timeout=40)
    assert answer["text"] == "A slow but certain answer."
    assert ha.last("mimi/kitchen/availability") == "online"


def test_a_board_reset_mid_turn_answers_the_message_after_booting_again(kitchen, boot, ha, fake):
    fake.script(text("This answer never leaves the board.", chunk=4, delay=0.5),
                text("Answered after the reset."))
    ha.publish("mimi/kitchen/in", {"text": "survive a reset", "id": "boot1"})
    fake.wait_requests(1, timeout=10)
    kitchen.stop()  # power gone mid-turn: the message was never acknowledged to the broker
    again = boot()  # the same flash: MQTT settings from NVS, the broker's session for mimi-kitchen
    again.pos = 0  # it connects during boot, before the ready line
    again.expect(r"mqtt: connected to 127\.0\.0\.1:\d+ as mimi/kitchen", timeout=20)
    answer = ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "boot1", timeout=30)
    assert answer["text"] == "Answered after the reset."
    assert "survive a reset" in json.dumps(fake.requests[-1]["body"]["messages"][-1])


def test_a_message_sent_while_the_board_is_away_is_answered_when_it_is_back(kitchen, broker, ha, fake):
    assert "MQTT off: disconnected" in kitchen.command("mqtt_off")
    assert ha.last("mimi/kitchen/availability") == "offline"  # said by the board itself, retained
    assert ha.wait("mimi/kitchen/state", lambda d: d.get("online") is False)
    assert "MQTT: off" in kitchen.command("mqtt_status")
    fake.script(text("Sorry for the wait."))
    ha.publish("mimi/kitchen/in", {"text": "are you there?", "id": "away1"})  # the broker keeps it (QoS 1)
    kitchen.command("mqtt_set 127.0.0.1 {}".format(broker.port))
    assert ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "away1")["text"] == "Sorry for the wait."


def test_mqtt_off_while_messages_arrive_is_a_goodbye_not_a_vanishing(kitchen, broker, ha):
    # Switched off in its first seconds, while it is still coming online (a new board listens up to 2 s for
    # a retained state of its own) and messages keep arriving for it, here on that state topic (it drops
    # them without a word): the goodbye still holds. The state says offline, the broker keeps the will to
    # itself (a second "offline" would be it: a board that closes with the broker's last messages unread
    # resets the connection, and the broker loses its DISCONNECT), and the console shows no traceback.
    sender, sending = Watcher(broker, topics=()), threading.Event()
    noise = json.dumps({"online": True, "noise": "x" * 1000})

    def flood():
        while not sending.is_set():
            sender.client.publish("mimi/kitchen/state", noise, qos=0)  # faster than the board reads

    flooding = threading.Thread(target=flood, daemon=True)
    flooding.start()
    try:
        assert "MQTT off: disconnected" in kitchen.command("mqtt_off")
    finally:
        sending.set()
        flooding.join()
        sender.stop()
    assert ha.wait("mimi/kitchen/state", lambda d: d.get("online") is False, timeout=10)
    time.sleep(1)  # the will would come as the broker drops the connection
    assert [m[1] for m in ha.seen("mimi/kitchen/availability")][-2:] == [b"online", b"offline"]
    assert "Traceback" not in kitchen.output and "exception" not in kitchen.output


def test_mqtt_set_in_safe_mode_saves_the_broker_starts_nothing_and_says_why(boot, broker, flash):
    flash.mkdir(parents=True)
    (flash / "crash_at_boot").write_text("3")  # test hook: the next 3 normal starts raise, then safe mode
    dev = boot()
    assert "SAFE MODE: 3 crashes in a row soon after boot" in dev.output
    dev.command("mqtt_id kitchen")
    dev.command("mqtt_auth kitchen " + USERS["kitchen"])
    out = dev.command("mqtt_set 127.0.0.1 {}".format(broker.port))
    assert ("MQTT broker 127.0.0.1:{} saved; MQTT starts after a normal boot: the board is in safe mode (3 crashes "
            "soon after boot): console and gateway only; restart to leave it".format(broker.port)) in out
    assert "not started on this boot: the board is in safe mode" in dev.command("mqtt_status")
    time.sleep(2)
    assert "mqtt: " not in dev.output  # no connection tried: safe mode runs the gateway only
    dev.send("restart")
    dev.expect("--- reset ---", 30)
    dev.expect(r"mqtt: connected to 127\.0\.0\.1:\d+ as mimi/kitchen", timeout=30)  # the setting was saved


def test_the_broker_says_offline_for_a_board_that_vanishes(kitchen, ha):
    assert ha.last("mimi/kitchen/availability") == "online"
    kitchen.stop()  # power gone: no goodbye; the broker publishes the last will
    deadline = time.monotonic() + 20
    while ha.last("mimi/kitchen/availability") != "offline" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ha.last("mimi/kitchen/availability") == "offline"


def test_keep_alive_notices_a_broker_that_stops_answering(boot, broker):
    dev = connect_board(boot(), broker, "kitchen", extra=("config_set mqtt_config.keepalive 5",))
    dev.expect(r"mqtt: connected to 127\.0\.0\.1:\d+ as mimi/kitchen", timeout=20)
    broker.proc.send_signal(signal.SIGSTOP)  # alive but silent: no FIN, no RST, only missing PINGRESPs
    try:
        line = dev.expect(r"mqtt: connection to 127\.0\.0\.1:\d+ lost: [^\n]*", timeout=30).group(0)
        assert "no answer" in line
    finally:
        broker.proc.send_signal(signal.SIGCONT)
    dev.expect(r"mqtt: connected to 127\.0\.0\.1:\d+ as mimi/kitchen", timeout=60)


def test_a_wrong_password_gives_a_clear_line_and_is_never_printed(boot, broker):
    dev = connect_board(boot(), broker, "kitchen", password="not-the-password")
    line = dev.expect(r"mqtt: cannot connect to 127\.0\.0\.1:\d+: [^\n]*").group(0)
    assert "password" in line or "not authorized" in line
    status = dev.command("mqtt_status")
    assert "user: kitchen, password ********" in status
    assert "not-the-password" not in dev.output
    assert "not-the-password" not in dev.command("config_show")


def test_a_subscription_the_acl_refuses_gives_a_clear_line(boot, broker):
    dev = connect_board(boot(), broker, "shy", device_id="attic")  # shy may write mimi/attic/#, not read it
    dev.expect(r"mqtt: a test message to mimi/attic/in did not come back within 5 s: the broker's ACL does not "
               r"let user 'shy' read or write it, so messages to this board cannot arrive", timeout=30)
    assert "connected to 127.0.0.1" in dev.command("mqtt_status")


def test_mqtt_messages_act_as_observer_until_the_owner_says_otherwise(kitchen, ha, fake):
    kitchen.command("gpio_allow 4")
    fake.script(tool_use("gpio_write", {"pin": 4, "value": 1}), text("I may not."))
    ha.publish("mimi/kitchen/in", {"text": "light on", "id": "g1"})
    assert ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "g1")["text"] == "I may not."
    refusal = fake.requests[-1]["body"]["messages"][-1]["content"][0]
    assert refusal["is_error"] and "needs the operator role and the user asking is an observer" in refusal["content"]
    assert "careful" not in kitchen.command("mqtt_role operator")
    fake.script(tool_use("gpio_write", {"pin": 4, "value": 1}), text("The light is on."))
    ha.publish("mimi/kitchen/in", {"text": "light on", "id": "g2"})
    assert ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "g2")["text"] == "The light is on."
    report = ha.wait("mimi/kitchen/out", lambda d: d.get("kind") == "report")
    assert "gpio_write" in report["text"]
    assert "gpio_write" in kitchen.command("audit_tail 3")  # the audit log has it, like any channel's call
    # Even an operator on MQTT never gets owner tools; only the owner can make MQTT the owner.
    fake.script(tool_use("write_file", {"path": "files/x.txt", "content": "hi"}), text("Not allowed."))
    ha.publish("mimi/kitchen/in", {"text": "write", "id": "g3"})
    ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "g3")
    assert "needs the owner role" in fake.requests[-1]["body"]["messages"][-1]["content"][0]["content"]
    assert "careful: anyone who may publish to mimi/kitchen/in now owns this device" in kitchen.command(
        "mqtt_role owner")


def test_mqtt_senders_have_the_same_rate_limit_as_any_user(kitchen, ha, fake):
    kitchen.command("config_set safety_config.user_per_min 1")
    fake.script(text("First one is fine."))
    ha.publish("mimi/kitchen/in", {"text": "one", "id": "b1"})
    assert ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "b1")["kind"] == "reply"
    ha.publish("mimi/kitchen/in", {"text": "two", "id": "b2"})
    second = ha.wait("mimi/kitchen/out", lambda d: d.get("id") == "b2")
    assert second["kind"] == "refused" and len(fake.requests) == 1


def test_mqtt_publish_only_to_allowed_topics(kitchen, ha):
    out = kitchen.command('tool_exec mqtt_publish {"topic": "home/lamp/set", "payload": "ON"}')
    assert "not a topic the owner allowed" in out and "mqtt_allow home/lamp/set" in out
    assert "home/lamp/#" in kitchen.command("mqtt_allow home/lamp/#")
    out = kitchen.command('tool_exec mqtt_publish {"topic": "home/lamp/set", "payload": "ON"}')
    assert "acknowledged by the broker" in out
    assert ha.wait("home/lamp/set") == "ON"
    assert "wildcard" in kitchen.command('tool_exec mqtt_publish {"topic": "home/lamp/#", "payload": "x"}')
    assert "mqtt_publish: tier operator, level report" in kitchen.command("tool_policy mqtt_publish")
    assert "now confirm" in kitchen.command("tool_policy mqtt_publish confirm")  # asked first, like gpio_write


def test_a_watcher_reads_an_mqtt_topic(kitchen, ha, fake):
    ha.publish("home/temp", {"c": 21.5}, retain=True)
    fake.script(text("WATCH_OK"))
    assert "mqtt:home/temp" in kitchen.command('watch_add hot mqtt:home/temp 60 "tell me when it is over 30 C"')
    kitchen.command("watch_check hot", timeout=30)
    prompt = json.dumps(fake.wait_requests(1, timeout=20)[-1]["body"]["messages"][-1])
    assert "Reading now:" in prompt and "home/temp" in prompt and "21.5" in prompt
    out = kitchen.command("watch_add bad mqtt:home/# 60 x")
    assert "mqtt:home/#" in out  # a filter with wildcards is a valid source; the newest match is read


def test_tls_with_the_test_ca_and_refused_without_it(boot, broker, flash):
    dev = connect_board(boot(), broker, "kitchen", extra=("mqtt_tls on",))
    dev.command("mqtt_set localhost {}".format(broker.tls_port))
    dev.expect(r"mqtt: cannot connect to localhost:\d+: the TLS certificate of localhost is not trusted", timeout=30)
    dev.command("mqtt_off")
    certs = flash / "data" / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copy(broker.certs["ca.der"], certs / "test_ca.der")
    dev.restart()
    dev.command("mqtt_set localhost {}".format(broker.tls_port))
    dev.expect(r"mqtt: connected to localhost:\d+ as mimi/kitchen \(TLS\)", timeout=30)


def test_two_boards_exchange_a_message_through_the_broker(boot, broker, runtime, tmp_path, fake):
    kitchen = connect_board(boot(), broker, "kitchen")
    kitchen.expect("mqtt: connected to .* as mimi/kitchen", timeout=20)
    from tests.e2e.device import Device

    hall = Device(runtime, tmp_path / "hall_flash", "--anthropic-api", fake.url, "--ws-port", str(free_port()))
    try:
        hall.ready(timeout=60)
        connect_board(hall, broker, "hall")
        hall.expect("mqtt: connected to .* as mimi/hall", timeout=60)
        fake.script(text("Hall here: the door is locked."))
        out = kitchen.command('tool_exec send_message {"channel": "mqtt", "chat_id": "hall", "text": "is the door locked?"}')
        assert "sent to mqtt chat hall" in out
        kitchen.expect("board hall answered: Hall here: the door is locked.", timeout=60)
        assert "is the door locked?" in json.dumps(fake.requests[-1]["body"]["messages"][-1])
    except AssertionError as exc:
        raise AssertionError("{}\nthe hall board said:\n{}".format(exc, hall.output[-2000:]))
    finally:
        hall.stop()
