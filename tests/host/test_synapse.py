# The real-Synapse harness (tests/synapse.py) itself: users, DMs, edits, restart, media over TLS, rate limits.
import json
import ssl
import struct
import threading
import time
import urllib.request
import zlib

import pytest

from tests.synapse import INSTALL_HINT, Homeserver, MatrixError, available, call

pytestmark = pytest.mark.skipif(not available(), reason=INSTALL_HINT)


def _png(width=2, height=2):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def hs(tmp_path_factory):
    t0 = time.monotonic()
    server = Homeserver(tmp_path_factory.mktemp("synapse"))
    server.start()
    server.first_start_s = time.monotonic() - t0  # config generation, test CA, database set-up, both listeners
    yield server
    server.stop()


@pytest.fixture(scope="module")
def alice(hs):
    hs.register("alice", "alice-pass")
    return hs.login("alice", "alice-pass")


@pytest.fixture(scope="module")
def bob(hs):
    hs.register("bob", "bob-pass")
    return hs.login("bob", "bob-pass")


def test_register_and_login(hs, alice, bob):
    assert (alice.user_id, bob.user_id) == ("@alice:localhost", "@bob:localhost")
    assert hs.register("alice", "alice-pass") == "@alice:localhost"  # again, same password: the id
    with pytest.raises(MatrixError) as err:
        hs.register("alice", "not-her-pass")
    assert err.value.errcode == "M_USER_IN_USE" and "another password" in str(err.value)
    with pytest.raises(MatrixError) as err:
        hs.login("alice", "wrong")
    assert (err.value.status, err.value.errcode) == (403, "M_FORBIDDEN")
    with pytest.raises(MatrixError) as err:
        call(hs.plain_url, "GET", "/_matrix/client/v3/account/whoami", token="nonsense")
    assert (err.value.status, err.value.errcode) == (401, "M_UNKNOWN_TOKEN")
    assert alice.call("GET", "/_matrix/client/v3/account/whoami")["user_id"] == alice.user_id
    print("\nsynapse: first start {:.1f} s (generate config + CA + db), RSS {} MB".format(
        hs.first_start_s, hs.rss_kb() // 1024))


def test_dm_text_edit_and_sync(hs, alice, bob):
    first = bob.sync()  # the first sync: current state, no since
    room = alice.create_room(invite=[bob.user_id], is_direct=True, name="alice and bob")
    invited = bob.wait_for(lambda: bob.sync(first["next_batch"])["rooms"].get("invite", {}), what="the invite")
    assert room in invited
    assert bob.join(room) == room
    assert alice.joined_members(room) == ["@alice:localhost", "@bob:localhost"]
    seen_at = {}  # (asking again with the same since gives Synapse's cached answer of up to 2 minutes ago)

    def board_like_loop(since):  # long polls, as the board does, until alice's message arrives
        while "sent" not in seen_at and time.monotonic() < deadline:
            answer = bob.sync(since, timeout_ms=5000)
            since = answer["next_batch"]
            timeline = answer["rooms"].get("join", {}).get(room, {}).get("timeline", {}).get("events", [])
            if any(e["type"] == "m.room.message" for e in timeline):
                seen_at["sent"] = time.monotonic()

    deadline = time.monotonic() + 15
    poll = threading.Thread(target=board_like_loop, args=(first["next_batch"],))
    poll.start()
    time.sleep(0.5)
    sent_at = time.monotonic()
    alice.send_text(room, "hello bob", html="hello <b>bob</b>")
    poll.join(20)
    assert "sent" in seen_at and seen_at["sent"] - sent_at < 2  # the long poll woke up with it
    seen = bob.wait_for(lambda: bob.messages(room), what="alice's message")
    assert [(e["sender"], e["content"]["body"]) for e in seen] == [("@alice:localhost", "hello bob")]
    mine = bob.send_text(room, "hi alice, thinking...")
    bob.send_text(room, "second message")
    bob.edit(room, mine, "hi alice: draft")
    bob.edit(room, mine, "hi alice, **done**", html="hi alice, <b>done</b>")
    replies = alice.wait_for(lambda: alice.replies_from(room, bob.user_id), what="bob's replies")
    assert replies == [
        {"event_id": mine, "body": "hi alice, **done**", "msgtype": "m.text",
         "formatted_body": "hi alice, <b>done</b>", "edits": 2},
        {"event_id": replies[1]["event_id"], "body": "second message", "msgtype": "m.text", "formatted_body": None,
         "edits": 0}]
    assert alice.replies_from(room, alice.user_id)[0]["formatted_body"] == "hello <b>bob</b>"
    direct = alice.call("GET", "/_matrix/client/v3/user/{}/account_data/m.direct".format(alice.user_id))
    assert direct == {bob.user_id: [room]}
    bob.leave(room)
    assert alice.joined_members(room) == ["@alice:localhost"]
    with pytest.raises(MatrixError) as err:  # a private room: no way back without a new invite
        bob.join(room)
    assert (err.value.status, err.value.errcode) == (403, "M_FORBIDDEN")
    alice.invite(room, bob.user_id)
    bob.join(room)
    assert alice.joined_members(room) == ["@alice:localhost", "@bob:localhost"]


def test_encrypted_room(alice, bob):
    room = alice.create_room(invite=[bob.user_id], encrypted=True)
    bob.join(room)
    state = alice.call("GET", "/_matrix/client/v3/rooms/{}/state/m.room.encryption".format(room))
    assert state == {"algorithm": "m.megolm.v1.aes-sha2"}
    event_id = alice.send_encrypted_placeholder(room)
    events = bob.messages(room, types=("m.room.encrypted",))
    assert [e["event_id"] for e in events] == [event_id]
    assert bob.messages(room) == []  # no m.room.message a board could read


def test_restart_keeps_users_rooms_and_messages(hs, alice, bob):
    room = alice.create_room(invite=[bob.user_id])
    bob.join(room)
    sent = [alice.send_text(room, "before restart {}".format(i)) for i in range(3)]
    url, plain_url = hs.url, hs.plain_url
    hs.restart(down_s=0.2)
    print("\nsynapse: restart {:.1f} s, RSS {} MB".format(hs.start_seconds, hs.rss_kb() // 1024))
    assert (hs.url, hs.plain_url) == (url, plain_url)
    assert [e["event_id"] for e in bob.messages(room)] == sent  # the old token still works
    assert hs.login("bob", "bob-pass").joined_members(room) == ["@alice:localhost", "@bob:localhost"]
    assert hs.register("bob", "bob-pass") == "@bob:localhost"


def test_image_downloads_through_authenticated_media_over_tls(hs, alice, bob):
    room = alice.create_room(invite=[bob.user_id], is_direct=True)
    bob.join(room)
    png = _png()
    mxc = alice.upload(png, "image/png", "red.png")
    assert mxc.startswith("mxc://localhost/")
    alice.send_image(room, mxc, "red.png", {"mimetype": "image/png", "size": len(png), "w": 2, "h": 2})
    doc = alice.upload(b"%PDF-1.4 junk", "application/pdf", "notes.pdf")
    alice.send_file(room, doc, "notes.pdf", {"mimetype": "application/pdf"})
    image, file = bob.messages(room)
    assert (image["content"]["msgtype"], image["content"]["url"]) == ("m.image", mxc)
    assert (file["content"]["msgtype"], file["content"]["url"]) == ("m.file", doc)
    media_id = mxc[len("mxc://localhost/"):]
    # as the board does it: TLS listener, the test CA, the authenticated media API with its token
    req = urllib.request.Request("{}/_matrix/client/v1/media/download/localhost/{}".format(hs.url, media_id),
                                 headers={"Authorization": "Bearer " + bob.token})
    with urllib.request.urlopen(req, timeout=10, context=ssl.create_default_context(cafile=hs.ca_pem)) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"] == "image/png"
        assert resp.read() == png
    assert bob.download(doc) == (b"%PDF-1.4 junk", "application/pdf")
    with pytest.raises(MatrixError) as err:  # no token: refused
        call(hs.plain_url, "GET", "/_matrix/client/v1/media/download/localhost/" + media_id)
    assert (err.value.status, err.value.errcode) == (401, "M_MISSING_TOKEN")
    for token in (None, bob.token):  # the old unauthenticated API is frozen: new media is not found there
        with pytest.raises(MatrixError) as err:
            call(hs.plain_url, "GET", "/_matrix/media/v3/download/localhost/" + media_id, token=token)
        assert (err.value.status, err.value.errcode) == (404, "M_NOT_FOUND")
    versions = call(hs.plain_url, "GET", "/_matrix/client/versions")["versions"]
    assert "v1.11" in versions  # the version that brought authenticated media


def test_rate_limit_override_gives_limit_exceeded(hs, alice):
    hs.register("carol", "carol-pass")
    carol = hs.login("carol", "carol-pass")
    room = carol.create_room(invite=[alice.user_id])
    assert [carol.send_text(room, "ok {}".format(i)) for i in range(20)]  # the default limits are generous
    assert hs.set_ratelimit(carol.user_id, 1, 2) == {"messages_per_second": 1, "burst_count": 2}
    with pytest.raises(MatrixError) as err:
        for i in range(10):
            carol.send_text(room, "fast {}".format(i))
    assert (err.value.status, err.value.errcode) == (429, "M_LIMIT_EXCEEDED")
    assert 0 < err.value.retry_after_ms <= 2000, err.value.body
    time.sleep(err.value.retry_after_ms / 1000 + 0.05)
    carol.send_text(room, "after waiting")  # retry_after_ms is honest
    hs.clear_ratelimit(carol.user_id)
    assert [carol.send_text(room, "free again {}".format(i)) for i in range(10)]
    assert json.dumps(hs.admin("GET", "/_synapse/admin/v1/users/{}/override_ratelimit".format(
        carol.user_id))) == "{}"
