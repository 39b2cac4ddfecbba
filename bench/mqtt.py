# Figure over a real Mosquitto: a message published on mimi/<id>/in to its answer on /out (instant fake brain).
import json
import socket
import threading
import time

from bench.setup import Firmware, free_port, fresh_dir, reps
from bench.stats import summary
from host_sim.fake_anthropic import text
from tests.mosquitto import USERS, Broker, find

BOARD = "kitchen"  # a user of the test broker's password file and ACL
WAIT_S = 30


class _Answers:
    """A plain MQTT client on the board's out topic: when each answer (by id) arrived."""

    def __init__(self, port):
        import paho.mqtt.client as paho

        self.arrived = {}
        self.ready = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="bench-ha")
        self.client.username_pw_set("ha", USERS["ha"])
        self.client.on_connect = lambda c, u, f, rc, p: (c.subscribe("mimi/{}/out".format(BOARD), 1),
                                                         self.ready.set())
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle wait on our side
        self.client.loop_start()
        self.ready.wait(10)

    def _on_message(self, client, userdata, message):
        try:
            rid = json.loads(message.payload).get("id")
        except ValueError:
            return
        self.arrived.setdefault(rid, time.perf_counter())

    def ask(self, rid):
        sent = time.perf_counter()
        self.client.publish("mimi/{}/in".format(BOARD), json.dumps({"text": "ping " + rid, "id": rid}), qos=1)
        deadline = time.monotonic() + WAIT_S
        while rid not in self.arrived and time.monotonic() < deadline:
            time.sleep(0.0005)
        return (self.arrived[rid] - sent) * 1000 if rid in self.arrived else None

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()


def in_to_out(runtime, fake, broker):
    flash = fresh_dir("mqtt-" + runtime)
    times = []
    with Firmware(runtime, flash, "--anthropic-api", fake.url, "--ws-port", free_port()) as firmware:
        firmware.expect(r"ready: network up")
        for line in ("mqtt_id " + BOARD, "mqtt_auth {} {}".format(BOARD, USERS[BOARD]),
                     "config_set safety_config.user_per_min 1000",
                     "mqtt_set 127.0.0.1 {}".format(broker.port)):
            firmware.command(line)
        firmware.expect(r"mqtt: connected to")
        answers = _Answers(broker.port)
        try:
            for n in range(reps(30, 5) + 2):
                fake.script(text("pong"))
                took = answers.ask("{}-{}".format(runtime, n))
                if n >= 2:  # the first turns warm up (imports, the first TLS-free Claude connection)
                    times.append(took)
        finally:
            answers.stop()
    return summary(times, 1)


def measure(fake, log):
    if find() is None:
        log("  skipped: mosquitto is not installed (apt-get install mosquitto)")
        return ({},)
    broker = Broker(fresh_dir("mosquitto"))
    broker.start()
    figure = {}
    try:
        for runtime in ("mpy", "cpython"):
            figure[runtime] = in_to_out(runtime, fake, broker)
            log("  {}: MQTT in -> out {} ms".format(runtime, figure[runtime]["median"]))
    finally:
        broker.stop()
    return (figure,)
