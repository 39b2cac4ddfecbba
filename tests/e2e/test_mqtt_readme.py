# The README's Mosquitto snippets as a user pastes them (#23): the acl_file and the mosquitto.conf lines,
# taken from the page that holds them (README.md or docs/*.md: docs/mqtt.md), start a real Mosquitto; a board
# reaches its own topics and not another's, Home Assistant reaches everything. Only the file paths and the port
# are changed, to the test's own.
import glob
import os
import re
import shutil
import subprocess
import time

import pytest

from tests.e2e.conftest import free_port
from tests.mosquitto import INSTALL_HINT, find
from tests.runtimes import ROOT

paho = pytest.importorskip("paho.mqtt.client")


def readme_block(marker):
    """The code block right after the `<!-- mosquitto: <marker> ... -->` line of README.md or the page of docs/
    that holds it (docs/mqtt.md today), unindented."""
    found = None
    for page in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        found = re.search(r"<!-- mosquitto: " + re.escape(marker) + r"[^\n]*-->\n( *)```\n(.*?)\n *```", text, re.S)
        if found:
            break
    assert found, "no block marked {} in the README or docs/".format(marker)
    indent = found.group(1)
    return "\n".join(line[len(indent):] for line in found.group(2).split("\n")) + "\n"


def _client(port, user, password):
    got = []
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=user)
    client.username_pw_set(user, password)
    client.on_message = lambda c, u, message: got.append((message.topic, message.payload))
    client.connect("127.0.0.1", port)
    client.loop_start()
    return client, got


def _wait(got, count, seconds=5):
    deadline = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_mosquitto_starts_with_the_readme_acl_and_conf_as_pasted(tmp_path):
    binary = find()
    if binary is None:
        pytest.skip(INSTALL_HINT)
    acl, conf = readme_block("acl_file"), readme_block("mosquitto.conf")
    assert "acl_file /etc/mosquitto/acl" in conf and "listener 1883" in conf
    port = free_port()
    conf = conf.replace("/etc/mosquitto/", str(tmp_path) + "/").replace("listener 1883", "listener {} 127.0.0.1"
                                                                         .format(port))
    if os.geteuid() == 0:
        conf = "user root\n" + conf  # files in a root-only temp folder stay readable
    (tmp_path / "acl").write_text(acl)
    (tmp_path / "passwd").write_text("kitchen:kitchen-pass\nhall:hall-pass\nhomeassistant:ha-pass\n")
    subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd", "-U", str(tmp_path / "passwd")],
                   check=True, capture_output=True)
    (tmp_path / "mosquitto.conf").write_text(conf)
    broker = subprocess.Popen([binary, "-c", str(tmp_path / "mosquitto.conf")], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    clients = []
    try:
        for _ in range(100):
            assert broker.poll() is None, broker.stdout.read().decode()
            try:
                ha, ha_got = _client(port, "homeassistant", "ha-pass")
                break
            except OSError:
                time.sleep(0.05)
        kitchen, kitchen_got = _client(port, "kitchen", "kitchen-pass")
        hall, _ = _client(port, "hall", "hall-pass")
        clients += [ha, kitchen, hall]
        kitchen.subscribe("mimi/#", 1)
        ha.subscribe("#", 1)
        time.sleep(0.5)
        hall.publish("mimi/kitchen/in", b"hello kitchen", 1).wait_for_publish(5)  # boards write to each other
        hall.publish("mimi/hall/state", b"{}", 1).wait_for_publish(5)  # hall's own topic: kitchen may not read it
        ha.publish("mimi/kitchen/in", b"from home assistant", 1).wait_for_publish(5)
        _wait(kitchen_got, 2)
        _wait(ha_got, 3)
        assert sorted(kitchen_got) == [("mimi/kitchen/in", b"from home assistant"), ("mimi/kitchen/in", b"hello kitchen")]
        assert ("mimi/hall/state", b"{}") in ha_got
    finally:
        for client in clients:
            client.loop_stop()
            client.disconnect()
        broker.terminate()
        broker.wait(10)
