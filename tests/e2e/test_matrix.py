# The Matrix channel against a real Synapse homeserver (SQLite, TLS with the test CA), both runtimes and ROMFS.
import base64
import itertools
import json
import re
import shutil
import time

import pytest

from host_sim.fake_anthropic import text
from host_sim.telegram_files import jpeg_bytes
from tests.e2e.conftest import API_KEY
from tests.runtimes import RUNTIMES_WITH_ROMFS_TELEGRAM as RUNTIMES_WITH_ROMFS
from tests.synapse import INSTALL_HINT, Homeserver, available, wait_for

PASSWORD = "board-secret-PASSWORD-9"
_names = itertools.count(1)


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS))
def runtime(request):
    """Both runtimes, and the ROMFS form at the Telegram tests' heap (tests/runtimes.py)."""
    return RUNTIMES_WITH_ROMFS[request.param]


@pytest.fixture(scope="module")
def hs(tmp_path_factory):
    if not available():
        pytest.skip(INSTALL_HINT)
    server = Homeserver(tmp_path_factory.mktemp("synapse"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def users(hs):
    """Fresh names on the shared homeserver: (board's login name, alice as a User, bob as a User)."""
    n = "{}{}".format(next(_names), int(time.time() * 1000) % 100000)
    board, alice, bob = "board" + n, "alice" + n, "bob" + n
    hs.register(board, PASSWORD)
    hs.register(alice, "alice-pass")
    hs.register(bob, "bob-pass")
    return board, hs.login(alice, "alice-pass"), hs.login(bob, "bob-pass")


@pytest.fixture
def board(boot, hs, users, flash):
    """start() boots the firmware trusting the test CA, logs it in and admits alice as the owner."""

    def start():
        certs = flash / "data" / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        shutil.copy(hs.ca_der, certs / "test_ca.der")
        dev = boot()
        dev.command("set_api_key " + API_KEY)
        out = dev.command("matrix_set {} {} {}".format(hs.url, users[0], PASSWORD), timeout=40)
        assert "logged in as @{}:localhost".format(users[0]) in out, out
        dev.command("matrix_allow {} owner".format(users[1].user_id))
        wait_for(lambda: "Matrix: syncing as @" in dev.output, 30, what="the first sync")
        return dev

    return start


def _dm(alice, board_name, dev, encrypted=False):
    room = alice.create_room(invite=["@{}:localhost".format(board_name)], is_direct=True, encrypted=encrypted)
    dev.expect(r"Matrix: joined {}".format(re.escape(room)), timeout=30)
    return room


def _replies(alice, room, board_name):
    return alice.replies_from(room, "@{}:localhost".format(board_name))


def test_a_direct_message_is_answered_with_a_streamed_edit(board, users, fake, flash):
    dev = board()
    board_name, alice, _ = users
    room = _dm(alice, board_name, dev)
    reply = "Hello **Ada**! " + " ".join("word{}".format(i) for i in range(60))
    fake.script(text(reply, chunk=8, delay=0.1))
    alice.send_text(room, "hi there")
    done = wait_for(lambda: [r for r in _replies(alice, room, board_name) if r["body"] == reply], 60,
                    what="the final reply")
    assert len(_replies(alice, room, board_name)) == 1  # one message, edited while it streamed
    assert done[0]["edits"] >= 2 and done[0]["msgtype"] == "m.text"
    assert "<b>Ada</b>" in done[0]["formatted_body"]
    lines = (flash / "data" / "sessions").iterdir()
    assert any(p.name.startswith("matrix_") for p in lines)
    out = dev.command("config_show matrix")
    assert PASSWORD not in dev.output and "mx_config.token" in out
    nvs = json.loads((flash / "nvs.json").read_text())
    token = base64.b64decode(nvs["mx_config"]["token"][1]).decode()
    assert token.startswith("syt_") and token not in dev.output  # kept, never shown
    assert PASSWORD not in json.dumps(nvs) and base64.b64encode(PASSWORD.encode()).decode() not in json.dumps(nvs)


def test_a_stranger_is_refused_with_their_id_and_costs_no_call(board, users, fake):
    dev = board()
    board_name, alice, bob = users
    me = "@{}:localhost".format(board_name)
    bob.create_room(invite=[me], is_direct=True)  # a stranger's invitation is declined
    dev.expect(r"Matrix: declined an invitation from {}".format(re.escape(bob.user_id)), timeout=30)
    group = alice.create_room(invite=[me, bob.user_id], name="group")
    dev.expect(r"Matrix: joined {}".format(re.escape(group)), timeout=30)
    bob.join(group)
    wait_for(lambda: len(alice.joined_members(group)) == 3, 20, what="three members")
    bob.send_text(group, "just chatting among us")  # a group: not for the board
    bob.send_text(group, "{}: who are you?".format(board_name))
    dev.expect(r"Matrix user {} wants to chat: matrix_allow {}".format(re.escape(bob.user_id),
                                                                      re.escape(bob.user_id)), timeout=30)
    told = wait_for(lambda: _replies(alice, group, board_name), 20, what="the board's answer")
    assert len(told) == 1 and bob.user_id in told[0]["body"] and told[0]["msgtype"] == "m.notice"
    assert fake.requests == []
    fake.script(text("Named, so I answer."))
    alice.send_text(group, "bob, the board only answers when named")  # the owner, in a group: not for the board
    time.sleep(3)
    assert fake.requests == [] and len(_replies(alice, group, board_name)) == 1
    alice.send_text(group, "{}, are you there?".format(board_name))
    wait_for(lambda: [r for r in _replies(alice, group, board_name) if r["body"] == "Named, so I answer."], 40)
    assert "are you there?" in json.dumps(fake.requests[0]["body"]["messages"][-1])


def test_a_restart_keeps_next_batch_and_answers_nothing_twice(board, users, fake):
    dev = board()
    board_name, alice, _ = users
    room = _dm(alice, board_name, dev)
    fake.script(text("first answer"), text("second answer"))
    alice.send_text(room, "one")
    wait_for(lambda: [r for r in _replies(alice, room, board_name) if r["body"] == "first answer"], 40)
    # the preview may show the whole short text before the final send: a restart then would answer again
    wait_for(lambda: "1 answered" in dev.command("matrix_status"), 20, what="the reply's final send")
    dev.restart()
    wait_for(lambda: dev.output.count("Matrix: syncing as @") >= 2, 30, what="the new boot's first sync")
    time.sleep(3)  # a replayed message would be answered now
    assert [r["body"] for r in _replies(alice, room, board_name)] == ["first answer"]
    alice.send_text(room, "two")
    wait_for(lambda: len(_replies(alice, room, board_name)) == 2, 40, what="the second answer")
    assert [r["body"] for r in _replies(alice, room, board_name)] == ["first answer", "second answer"]
    assert len(fake.requests) == 2


def test_synapse_restarted_mid_conversation_loses_nothing_and_doubles_nothing(board, users, fake, hs):
    dev = board()
    board_name, alice, _ = users
    room = _dm(alice, board_name, dev)
    reply = "A long considered answer " + " ".join("part{}".format(i) for i in range(40))
    fake.script(text(reply, chunk=10, delay=0.15), text("after the restart"))
    alice.send_text(room, "think about it")
    fake.wait_requests(1, timeout=30)
    hs.stop()  # while the reply streams
    time.sleep(4)
    hs.start()
    wait_for(lambda: [r for r in _replies(alice, room, board_name) if r["body"] == reply], 90,
             what="the reply, delivered once the homeserver is back")
    alice.send_text(room, "still there?")
    wait_for(lambda: [r for r in _replies(alice, room, board_name) if r["body"] == "after the restart"], 90,
             what="an answer after the restart")
    bodies = [r["body"] for r in _replies(alice, room, board_name)]
    assert bodies.count(reply) == 1 and bodies.count("after the restart") == 1
    assert len(fake.requests) == 2


def test_a_rate_limited_send_is_retried(board, users, fake, hs):
    dev = board()
    board_name, alice, _ = users
    room = _dm(alice, board_name, dev)
    hs.set_ratelimit("@{}:localhost".format(board_name), 1, 1)
    try:
        reply = "Under a rate limit " + " ".join("w{}".format(i) for i in range(50))
        fake.script(text(reply, chunk=6, delay=0.1))
        alice.send_text(room, "quick")
        wait_for(lambda: [r for r in _replies(alice, room, board_name) if r["body"] == reply], 90,
                 what="the final reply despite the rate limit")
        assert '" 429 ' in hs.log_text() or " 429 " in hs.log_text()  # the homeserver did say wait
    finally:
        hs.clear_ratelimit("@{}:localhost".format(board_name))


def test_a_photo_reaches_claude_as_an_image(board, users, fake):
    dev = board()
    board_name, alice, _ = users
    room = _dm(alice, board_name, dev)
    photo = jpeg_bytes(20 * 1024, b"\x42" * 64)
    mxc = alice.upload(photo, "image/jpeg", "cat.jpg")
    fake.script(text("A cat, I think."))
    alice.send_image(room, mxc, "cat.jpg", {"mimetype": "image/jpeg", "size": len(photo), "w": 64, "h": 48})
    wait_for(lambda: [r for r in _replies(alice, room, board_name) if r["body"] == "A cat, I think."], 60)
    request = fake.wait_requests(1, timeout=10)[0]
    blocks = request["body"]["messages"][-1]["content"]
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == 1 and images[0]["source"]["media_type"] == "image/jpeg"
    assert base64.b64decode(images[0]["source"]["data"]) == photo
    assert request["status"] == 200


def test_an_encrypted_room_is_named_once_on_both_sides(board, users, fake):
    dev = board()
    board_name, alice, _ = users
    room = _dm(alice, board_name, dev, encrypted=True)
    alice.send_encrypted_placeholder(room)
    alice.send_encrypted_placeholder(room)
    dev.expect(r"Matrix: {} is an encrypted room".format(re.escape(room)), timeout=30)
    told = wait_for(lambda: _replies(alice, room, board_name), 20)
    time.sleep(2)
    told = _replies(alice, room, board_name)
    assert len(told) == 1 and "cannot read encrypted rooms" in told[0]["body"]
    assert "encrypted rooms the board cannot read: " + room in dev.command("matrix_status")
    assert fake.requests == []
