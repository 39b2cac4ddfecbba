# A real Mosquitto broker for the tests: loopback ports, a password file, an ACL and a TLS listener (test CA).
import os
import shutil
import socket
import subprocess
import time

from tests.certs import make_test_ca

INSTALL_HINT = "mosquitto is not installed: apt-get install mosquitto (make test installs it as root)"
# user -> password; "kitchen" and "hall" are boards, "ha" is Home Assistant, "peeker" may read nothing.
USERS = {"kitchen": "kitchen-pass", "hall": "hall-pass", "ha": "ha-pass", "peeker": "peeker-pass",
         "shy": "shy-pass"}
ACL = """\
# boards: their own topics, other boards' inboxes, Home Assistant's discovery, the devices they may drive
pattern readwrite mimi/%u/#
pattern write mimi/+/in
pattern write mimi/+/reply
pattern write homeassistant/#
user kitchen
topic readwrite home/#
user hall
topic readwrite home/#
# Home Assistant: everything
user ha
topic readwrite #
# shy may connect and write the topics of board "attic" but not read its inbox
user shy
topic write mimi/attic/#
"""


def find():
    return shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if os.path.exists(p)), None)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """start() / stop() / restart() on the same ports and state; port (plain) and tls_port (test CA)."""

    def __init__(self, folder):
        self.folder = str(folder)
        self.binary = find()
        self.proc = None
        self.port, self.tls_port = _free_port(), _free_port()
        os.makedirs(self.folder, exist_ok=True)
        ca_folder = os.path.join(self.folder, "ca")
        os.makedirs(ca_folder, exist_ok=True)
        self.certs = make_test_ca(ca_folder)
        passwd = os.path.join(self.folder, "passwd")
        with open(passwd, "w") as f:
            for user, password in USERS.items():
                f.write("{}:{}\n".format(user, password))
        subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd", "-U", passwd],
                       check=True, capture_output=True)
        acl = os.path.join(self.folder, "acl")
        with open(acl, "w") as f:
            f.write(ACL)
        self.log = os.path.join(self.folder, "mosquitto.log")
        self.conf = os.path.join(self.folder, "mosquitto.conf")
        lines = [
            "per_listener_settings false",
            "allow_anonymous false",
            "password_file " + passwd,
            "acl_file " + acl,
            "persistence true",
            "persistence_location " + self.folder + "/",
            "autosave_interval 1",
            "set_tcp_nodelay true",  # as a broker for interactive use should: no 40 ms Nagle waits
            "log_dest file " + self.log,
            "log_type all",
            "listener {} 127.0.0.1".format(self.port),
            "listener {} 127.0.0.1".format(self.tls_port),
            "cafile " + self.certs["ca.pem"],
            "certfile " + self.certs["server.pem"],
            "keyfile " + self.certs["server.key"],
        ]
        if os.geteuid() == 0:
            lines.insert(0, "user root")  # files in a root-only temp folder stay readable
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def start(self):
        self.proc = subprocess.Popen([self.binary, "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("mosquitto exited: " + self.log_text()[-2000:])
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                socket.create_connection(("127.0.0.1", self.tls_port), 0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("mosquitto did not listen: " + self.log_text()[-2000:])

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: mosquitto saves its persistence file first
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def restart(self, down_s=0.5):
        self.stop()
        time.sleep(down_s)
        return self.start()

    def log_text(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""
