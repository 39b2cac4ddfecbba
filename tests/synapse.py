# A real Synapse homeserver for the tests (SQLite, loopback, TLS with the test CA) and a small Matrix client.
import hashlib
import hmac
import importlib.util
import itertools
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from tests.certs import make_test_ca

INSTALL_HINT = "matrix-synapse is not installed: .venv/bin/pip install -r requirements-dev.txt"
ADMIN_NAME = "harness-admin"
GENEROUS = {"per_second": 1000, "burst_count": 10000}  # no test trips these by accident
RATE_LIMITS = ("rc_message", "rc_registration", "rc_registration_token_validity", "rc_joins_per_room",
               "rc_3pid_validation", "rc_third_party_invite", "rc_media_create", "rc_room_creation",
               "rc_admin_redaction", "rc_delayed_event_mgmt", "rc_reports", "rc_user_directory", "rc_profile",
               "rc_key_requests")
NESTED_RATE_LIMITS = {"rc_login": ("address", "account", "failed_attempts"), "rc_joins": ("local", "remote"),
                      "rc_invites": ("per_room", "per_user", "per_issuer"), "rc_presence": ("per_user",)}
# Root at WARNING; one line per request (synapse.access) and the start-up lines: small, and enough to debug.
LOG_CONFIG = """\
version: 1
formatters:
  precise:
    format: '%(asctime)s %(name)s %(levelname)s %(request)s %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: {log}
    encoding: utf8
loggers:
  synapse.access: {{level: INFO}}
  synapse.app: {{level: INFO}}
  synapse.storage.SQL: {{level: WARNING}}
root:
  level: WARNING
  handlers: [file]
disable_existing_loggers: false
"""
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_txn = itertools.count()


def available():
    return importlib.util.find_spec("synapse") is not None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _q(part):
    return urllib.parse.quote(part, safe="")


def _txn_id():
    return "t{}.{}".format(time.time_ns(), next(_txn))


class MatrixError(Exception):
    """An error answer from the homeserver: status (HTTP), errcode (M_...), error (text), retry_after_ms."""

    def __init__(self, status, errcode, error, body=None, method="", path=""):
        self.status, self.errcode, self.error = status, errcode, error
        self.body = body if isinstance(body, dict) else {}
        self.retry_after_ms = self.body.get("retry_after_ms")
        super().__init__("{} {} -> {} {}: {}".format(method, path, status, errcode, error))


def call(base_url, method, path, body=None, token=None, query=None, data=None, content_type=None,
         context=None, timeout=30, raw=False):
    """One request; JSON in and out (raw=True: (bytes, content type)). Error answers raise MatrixError."""
    url = base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
    headers = {}
    if body is not None:
        data, content_type = json.dumps(body).encode(), "application/json"
    if content_type:
        headers["Content-Type"] = content_type
    if token:
        headers["Authorization"] = "Bearer " + token
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        opener = _NO_PROXY if context is None else urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
        with opener.open(req, timeout=timeout) as resp:
            payload = resp.read()
            if raw:
                return payload, resp.headers.get("Content-Type")
            return json.loads(payload or b"{}")
    except urllib.error.HTTPError as e:
        payload = e.read()
        try:
            answer = json.loads(payload)
        except ValueError:
            answer = {"error": payload[:300].decode(errors="replace")}
        raise MatrixError(e.code, answer.get("errcode"), answer.get("error"), answer, method, path) from None


def wait_for(predicate, timeout=10.0, interval=0.2, what="the condition"):
    """Polls predicate() until it returns something truthy and returns that; AssertionError after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after {} s waiting for {} (last: {!r})".format(timeout, what, value))
        time.sleep(interval)


class Homeserver:
    """start() / stop() / restart() on the same ports and database; url (TLS, test CA) and plain_url (http)."""

    def __init__(self, folder, server_name="localhost"):
        self.folder = os.path.abspath(str(folder))
        self.server_name = server_name
        self.proc = None
        self.start_seconds = None  # how long the last start() took
        self.config = os.path.join(self.folder, "homeserver.yaml")
        self.log = os.path.join(self.folder, "homeserver.log")
        self.stdout = os.path.join(self.folder, "synapse.stdout")
        self._admin = None
        os.makedirs(self.folder, exist_ok=True)
        if not os.path.exists(self.config):
            self._generate()
        with open(self.config) as f:
            conf = yaml.safe_load(f)
        self.port, self.plain_port = conf["listeners"][0]["port"], conf["listeners"][1]["port"]
        self.shared_secret = conf["registration_shared_secret"]
        self.url = "https://127.0.0.1:{}".format(self.port)
        self.plain_url = "http://127.0.0.1:{}".format(self.plain_port)
        self.ca_pem, self.ca_der = (os.path.join(self.folder, "ca", name) for name in ("ca.pem", "ca.der"))

    def _generate(self):
        data = os.path.join(self.folder, "data")
        out = subprocess.run([sys.executable, "-m", "synapse.app.homeserver", "--generate-config",
                              "--server-name", self.server_name, "--report-stats=no", "--config-path", self.config,
                              "--data-directory", data], cwd=self.folder, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("synapse --generate-config failed: " + (out.stdout + out.stderr)[-2000:])
        ca_folder = os.path.join(self.folder, "ca")
        os.makedirs(ca_folder, exist_ok=True)
        certs = make_test_ca(ca_folder)
        with open(self.config) as f:
            conf = yaml.safe_load(f)
        tls_port, plain_port = _free_port(), _free_port()

        def listener(port, tls):
            return {"port": port, "bind_addresses": ["127.0.0.1"], "type": "http", "tls": tls, "x_forwarded": False,
                    "resources": [{"names": ["client"], "compress": False}]}

        log_config = os.path.join(self.folder, "log.yaml")
        with open(log_config, "w") as f:
            f.write(LOG_CONFIG.format(log=self.log))
        conf.pop("pid_file", None)
        conf.update({
            "public_baseurl": "https://127.0.0.1:{}/".format(tls_port),
            "listeners": [listener(tls_port, True), listener(plain_port, False)],
            "tls_certificate_path": certs["server.pem"],
            "tls_private_key_path": certs["server.key"],
            "database": {"name": "sqlite3", "args": {"database": os.path.join(data, "homeserver.db")}},
            "log_config": log_config,
            "media_store_path": os.path.join(data, "media_store"),
            "max_upload_size": "8M",
            "url_preview_enabled": False,
            "enable_registration": False,
            "report_stats": False,
            "trusted_key_servers": [],
            "suppress_key_server_warning": True,
            "presence": {"enabled": False},
            "bcrypt_rounds": 4,  # password hashing in ~1 ms instead of ~250 ms (login, register)
        })
        for key in RATE_LIMITS:
            conf[key] = dict(GENEROUS)
        for key, parts in NESTED_RATE_LIMITS.items():
            conf[key] = {part: dict(GENEROUS) for part in parts}
        with open(self.config, "w") as f:
            yaml.safe_dump(conf, f, sort_keys=False)

    # -- the process

    def start(self, timeout=60):
        t0 = time.monotonic()
        with open(self.stdout, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "synapse.app.homeserver", "-c", self.config],
                                         cwd=self.folder, stdout=out, stderr=subprocess.STDOUT)
        client = ssl.create_default_context(cafile=self.ca_pem)
        deadline = t0 + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code, self.proc = self.proc.returncode, None
                raise RuntimeError("synapse exited ({}): {}".format(code, self._tail()))
            try:
                call(self.plain_url, "GET", "/_matrix/client/versions", timeout=2)
                call(self.url, "GET", "/_matrix/client/versions", context=client, timeout=2)
                self.start_seconds = time.monotonic() - t0
                return self
            except (OSError, MatrixError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("synapse did not answer in {} s: {}".format(timeout, self._tail()))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
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
            with open(self.log, encoding="utf8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def _tail(self):
        try:
            with open(self.stdout, encoding="utf8", errors="replace") as f:
                out = f.read()[-1500:]
        except OSError:
            out = ""
        return "stdout/stderr: ...{}\nlog: ...{}".format(out, self.log_text()[-2500:])

    def rss_kb(self):
        """The Synapse process's resident memory in kB (from /proc), None when not running."""
        try:
            with open("/proc/{}/status".format(self.proc.pid)) as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (AttributeError, OSError, StopIteration):
            return None

    # -- users and the admin API

    def register(self, name, password, admin=False):
        """Registers @name:server_name with the shared secret; returns the user id. An existing name returns the
        id when the password logs in, and raises MatrixError(M_USER_IN_USE) when it does not."""
        return self._register(name, password, admin)["user_id"]

    def _register(self, name, password, admin):
        nonce = call(self.plain_url, "GET", "/_synapse/admin/v1/register")["nonce"]
        mac = hmac.new(self.shared_secret.encode(), digestmod=hashlib.sha1)
        mac.update(b"\x00".join([nonce.encode(), name.encode(), password.encode(),
                                 b"admin" if admin else b"notadmin"]))
        body = {"nonce": nonce, "username": name, "password": password, "admin": admin, "mac": mac.hexdigest()}
        try:
            return call(self.plain_url, "POST", "/_synapse/admin/v1/register", body)
        except MatrixError as e:
            if e.errcode != "M_USER_IN_USE":
                raise
            try:
                user = self.login(name, password)
            except MatrixError:
                raise MatrixError(e.status, e.errcode, "{} exists with another password".format(name), e.body,
                                  "POST", "/_synapse/admin/v1/register") from None
            return {"user_id": user.user_id, "access_token": user.token}

    def user_id(self, name):
        return name if name.startswith("@") else "@{}:{}".format(name, self.server_name)

    def login(self, name, password, tls=False):
        """Password login (a new device) -> User; tls=True talks to the TLS listener (test CA) instead."""
        base, context = (self.url, ssl.create_default_context(cafile=self.ca_pem)) if tls else (self.plain_url, None)
        answer = call(base, "POST", "/_matrix/client/v3/login", {
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": name}, "password": password},
            context=context)
        return User(base, answer["user_id"], answer["access_token"], answer.get("device_id"), context)

    def admin_token(self):
        if self._admin is None:
            self._admin = self._register(ADMIN_NAME, ADMIN_NAME + "-pass", True)["access_token"]
        return self._admin

    def admin(self, method, path, body=None, **kw):
        """A request with the harness's own admin user's token (registered on first use)."""
        return call(self.plain_url, method, path, body, token=self.admin_token(), **kw)

    def set_ratelimit(self, user_id, messages_per_second, burst_count):
        """Overrides the message rate limit (rc_message: sends, room creation, ...) of one user. Integers only;
        messages_per_second 0 means no limit at all. Exceeding it: 429 M_LIMIT_EXCEEDED with retry_after_ms."""
        return self.admin("POST", "/_synapse/admin/v1/users/{}/override_ratelimit".format(_q(self.user_id(user_id))),
                          {"messages_per_second": messages_per_second, "burst_count": burst_count})

    def clear_ratelimit(self, user_id):
        """Back to the server's (generous) default."""
        self.admin("DELETE", "/_synapse/admin/v1/users/{}/override_ratelimit".format(_q(self.user_id(user_id))))


class User:
    """A synchronous Matrix client for a test's human users (usually on the plain listener)."""

    def __init__(self, base_url, user_id, token, device_id=None, context=None):
        self.base_url, self.user_id, self.token, self.device_id, self.context = (
            base_url, user_id, token, device_id, context)

    def call(self, method, path, body=None, **kw):
        return call(self.base_url, method, path, body, token=self.token, context=self.context, **kw)

    def _room(self, room, rest=""):
        return "/_matrix/client/v3/rooms/{}{}".format(_q(room), rest)

    # -- rooms

    def create_room(self, invite=(), is_direct=False, name=None, encrypted=False):
        body = {"preset": "trusted_private_chat" if is_direct else "private_chat", "invite": list(invite),
                "is_direct": is_direct}
        if name is not None:
            body["name"] = name
        if encrypted:
            body["initial_state"] = [{"type": "m.room.encryption", "state_key": "",
                                      "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]
        room = self.call("POST", "/_matrix/client/v3/createRoom", body)["room_id"]
        if is_direct and invite:  # as Element does: the room is a DM in the creator's m.direct account data
            path = "/_matrix/client/v3/user/{}/account_data/m.direct".format(_q(self.user_id))
            try:
                direct = self.call("GET", path)
            except MatrixError:
                direct = {}
            for other in invite:
                direct.setdefault(other, []).append(room)
            self.call("PUT", path, direct)
        return room

    def join(self, room):
        return self.call("POST", "/_matrix/client/v3/join/{}".format(_q(room)), {})["room_id"]

    def leave(self, room):
        self.call("POST", self._room(room, "/leave"), {})

    def invite(self, room, user_id):
        self.call("POST", self._room(room, "/invite"), {"user_id": user_id})

    def joined_members(self, room):
        return sorted(self.call("GET", self._room(room, "/joined_members"))["joined"])

    def logout(self):
        self.call("POST", "/_matrix/client/v3/logout", {})

    # -- sending

    def send(self, room, event_type, content):
        path = self._room(room, "/send/{}/{}".format(_q(event_type), _txn_id()))
        return self.call("PUT", path, content)["event_id"]

    def send_text(self, room, body, html=None):
        content = {"msgtype": "m.text", "body": body}
        if html is not None:
            content.update(format="org.matrix.custom.html", formatted_body=html)
        return self.send(room, "m.room.message", content)

    def edit(self, room, event_id, body, html=None):
        new = {"msgtype": "m.text", "body": body}
        if html is not None:
            new.update(format="org.matrix.custom.html", formatted_body=html)
        content = {"msgtype": "m.text", "body": "* " + body, "m.new_content": new,
                   "m.relates_to": {"rel_type": "m.replace", "event_id": event_id}}
        return self.send(room, "m.room.message", content)

    def send_encrypted_placeholder(self, room):
        """An m.room.encrypted event with junk ciphertext: what a board without E2EE sees of an encrypted room."""
        return self.send(room, "m.room.encrypted", {
            "algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg",
            "device_id": self.device_id or "JUNK", "sender_key": "junkjunkjunk", "session_id": "junkjunkjunk"})

    def upload(self, data, content_type, filename=None):
        """-> the mxc:// URI."""
        query = {"filename": filename} if filename else None
        return self.call("POST", "/_matrix/media/v3/upload", data=data, content_type=content_type,
                         query=query)["content_uri"]

    def download(self, mxc):
        """-> (bytes, content type), through the authenticated media API (as the board must)."""
        server, media_id = mxc[len("mxc://"):].split("/", 1)
        return self.call("GET", "/_matrix/client/v1/media/download/{}/{}".format(_q(server), _q(media_id)),
                         raw=True)

    def send_image(self, room, mxc, body, info=None):
        return self.send(room, "m.room.message", {"msgtype": "m.image", "body": body, "url": mxc,
                                                  "info": info or {}})

    def send_file(self, room, mxc, body, info=None, filename=None):
        content = {"msgtype": "m.file", "body": body, "url": mxc, "info": info or {}}
        if filename:
            content["filename"] = filename
        return self.send(room, "m.room.message", content)

    # -- reading

    def sync(self, since=None, timeout_ms=0, filter=None):
        """The raw /sync answer. Synapse keeps a non-empty answer for 2 minutes per (device, filter, since): asking
        again with the same since returns that same answer, not what happened since."""
        query = {"timeout": timeout_ms}
        if since:
            query["since"] = since
        if filter is not None:
            query["filter"] = filter if isinstance(filter, str) else json.dumps(filter)
        return self.call("GET", "/_matrix/client/v3/sync", query=query, timeout=30 + timeout_ms / 1000)

    def messages(self, room, limit=50, types=("m.room.message",)):
        """The room's latest events of these types (at most limit), oldest first."""
        events, start = [], None
        while len(events) < limit:
            query = {"dir": "b", "limit": min(100, limit - len(events))}
            if start:
                query["from"] = start
            page = self.call("GET", self._room(room, "/messages"), query=query)
            events += [e for e in page.get("chunk", []) if e.get("type") in types]
            start = page.get("end")
            if not page.get("chunk") or not start:
                break
        return events[:limit][::-1]

    def replies_from(self, room, sender, limit=500):
        """sender's messages as a client shows them: each original with its latest edit (m.replace) applied ->
        [{event_id, body, msgtype, formatted_body, edits}], oldest first."""
        originals, edits = [], {}
        for event in self.messages(room, limit):
            if event.get("sender") != sender:
                continue
            content = event.get("content", {})
            relates = content.get("m.relates_to") or {}
            if relates.get("rel_type") == "m.replace":
                edits.setdefault(relates.get("event_id"), []).append(content.get("m.new_content") or {})
            else:
                originals.append((event["event_id"], content))
        replies = []
        for event_id, content in originals:
            shown = edits[event_id][-1] if event_id in edits else content
            replies.append({"event_id": event_id, "body": shown.get("body"), "msgtype": shown.get("msgtype"),
                            "formatted_body": shown.get("formatted_body"), "edits": len(edits.get(event_id, ()))})
        return replies

    def wait_for(self, predicate, timeout=10.0, interval=0.2, what="the condition"):
        return wait_for(predicate, timeout, interval, what)
