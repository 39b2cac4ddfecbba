# The fake Telegram's flood control, scripted faults and running modes, seen from an HTTP client.
import http.client
import json
import ssl
import subprocess
import sys
import threading
import time

import pytest

from host_sim.fake_telegram import FakeTelegram
from tests.certs import make_test_ca, server_context
from tests.host.test_fake_telegram import (
    ROOT, TERMINATED, WEBHOOK_CONFLICT, api, exchange, in_background, refused)


@pytest.fixture
def fake():
    with FakeTelegram() as server:
        server.add_chat(42)
        yield server


def send(fake, chat_id=42, text="x"):
    return exchange(fake.url, "sendMessage", {"chat_id": chat_id, "text": text})


def flood(retry_after):
    return refused(429, "Too Many Requests: retry after {}".format(retry_after))[1]


# ---- flood control ----

def test_a_chat_gets_a_short_burst_then_429_with_retry_after(fake):
    fake.add_chat(7)
    fake.set_rate_limits(per_chat=(1.0, 3))
    assert [send(fake)[0] for _ in range(3)] == [200, 200, 200]
    status, headers, body = send(fake)
    assert status == 429 and headers["retry-after"] == "1"
    assert body == dict(flood(1), parameters={"retry_after": 1})
    assert send(fake, chat_id=7)[0] == 200  # another chat has its own allowance
    time.sleep(1.05)
    assert send(fake)[0] == 200
    assert len(fake.sent(42)) == 4  # the refused one was not delivered


def test_the_default_limits_allow_a_burst_but_not_a_flood(fake):
    statuses = [send(fake)[0] for _ in range(20)]
    assert statuses[:5] == [200] * 5 and 429 in statuses


def test_the_per_chat_limit_can_be_switched_off(fake):
    fake.set_rate_limits(per_chat=None)
    assert {send(fake)[0] for _ in range(25)} == {200}


def test_the_overall_limit_spans_chats(fake):
    fake.set_rate_limits(per_chat=None, overall=(0.5, 5))  # slow refill: no luck in timing
    for chat_id in range(1, 7):
        fake.add_chat(chat_id)
    statuses = [send(fake, chat_id)[0] for chat_id in range(1, 7)]
    assert statuses == [200] * 5 + [429]
    assert send(fake, 1)[2]["parameters"]["retry_after"] == 2


def test_groups_get_20_messages_a_minute(fake):
    fake.add_chat(-100)
    fake.set_rate_limits(overall=None)
    statuses = [send(fake, -100)[0] for _ in range(21)]
    assert statuses == [200] * 20 + [429]
    assert send(fake, -100)[2]["parameters"]["retry_after"] == 3


def test_edits_count_against_the_chat_limit(fake):
    fake.set_rate_limits(per_chat=(1.0, 2))
    message_id = send(fake)[2]["result"]["message_id"]
    assert api(fake, "editMessageText", chat_id=42, message_id=message_id, text="y")[0] == 200
    assert api(fake, "editMessageText", chat_id=42, message_id=message_id, text="z")[0] == 429


def test_rate_limits_can_be_off_from_the_start():
    with FakeTelegram(rate_limits=False) as fake:
        fake.add_chat(42)
        assert {send(fake)[0] for _ in range(40)} == {200}


# ---- scripted failures ----

def test_fail_next_429_has_the_header_and_parameters(fake):
    fake.fail_next("sendMessage", 429, retry_after=7)
    status, headers, body = send(fake)
    assert (status, headers["retry-after"]) == (429, "7")
    assert body == dict(flood(7), parameters={"retry_after": 7})
    assert send(fake)[0] == 200 and len(fake.sent(42)) == 1


def test_fail_next_speaks_each_documented_error(fake):
    cases = [(409, None, TERMINATED), (409, WEBHOOK_CONFLICT, WEBHOOK_CONFLICT),
             (500, None, "Internal Server Error"), (401, None, "Unauthorized"),
             (403, None, "Forbidden: bot was blocked by the user")]
    for status, description, expected in cases:
        fake.fail_next("getUpdates", status, description)
        assert api(fake, "getUpdates") == refused(status, expected)
    assert api(fake, "getUpdates")[0] == 200


def test_a_502_comes_from_the_proxy_as_html(fake):
    fake.fail_next("sendMessage", 502)
    status, headers, body = send(fake)
    assert status == 502 and headers["content-type"].startswith("text/html")
    assert "502 Bad Gateway" in body
    assert fake.sent(42) == []


def test_fail_next_counts_times_and_leaves_other_methods_alone(fake):
    fake.fail_next("sendmessage", 500, times=2)
    assert api(fake, "getMe")[0] == 200
    assert [send(fake)[0] for _ in range(3)] == [500, 500, 200]


def test_conflict_second_poller_ends_a_held_poll(fake):
    out, worker = in_background(api, fake, "getUpdates", timeout=20)
    time.sleep(0.3)
    started = time.monotonic()
    fake.conflict_second_poller()
    worker.join(5)
    assert out == [refused(409, TERMINATED)] and time.monotonic() - started < 1


def test_conflict_second_poller_hits_the_next_poll_when_none_is_held(fake):
    fake.conflict_second_poller()
    assert api(fake, "getUpdates") == refused(409, TERMINATED)
    assert api(fake, "getUpdates")[0] == 200


def test_a_reset_connection_cuts_the_answer_after_the_message_went_out(fake):
    fake.reset_connection_next("sendMessage")
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        send(fake, text="lost answer")
    assert [m["text"] for m in fake.sent(42)] == ["lost answer"]
    assert fake.calls[-1]["fault"] == "reset"
    fake.reset_connection_next("sendMessage", before=True)
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        send(fake, text="never sent")
    assert len(fake.sent(42)) == 1 and send(fake)[0] == 200


def test_a_held_answer_comes_late_after_the_message_went_out(fake):
    fake.hold_answer_next("sendMessage", 1.0)
    out, worker = in_background(send, fake, 42, "held")
    assert fake.wait_for(lambda: any(c.get("held") for c in fake.calls), 5)
    assert [m["text"] for m in fake.sent(42)] == ["held"] and out == []  # delivered, not yet answered
    worker.join(5)
    assert out[0][0] == 200 and send(fake)[0] == 200  # one call held, the next answered at once


def test_malformed_next_is_a_200_with_broken_json(fake):
    fake.malformed_next("getMe")
    status, headers, body = exchange(fake.url, "getMe")
    assert status == 200 and headers["content-type"] == "application/json"
    assert isinstance(body, str) and body.startswith('{"ok":true')
    with pytest.raises(ValueError):
        json.loads(body)
    assert isinstance(exchange(fake.url, "getMe")[2], dict)


def test_duplicate_next_update_delivers_an_update_twice(fake):
    first = fake.user_message(42, "once")
    fake.duplicate_next_update()
    assert [u["update_id"] for u in api(fake, "getUpdates")[1]["result"]] == [first]
    again = api(fake, "getUpdates", offset=first + 1)[1]["result"]
    assert [u["update_id"] for u in again] == [first]
    assert api(fake, "getUpdates", offset=first + 1)[1]["result"] == []


def test_slow_next_delays_one_answer(fake):
    fake.slow_next("getMe", 0.5)
    started = time.monotonic()
    assert api(fake, "getMe")[0] == 200
    assert time.monotonic() - started >= 0.5
    started = time.monotonic()
    api(fake, "getMe")
    assert time.monotonic() - started < 0.4


# ---- helpers, threads and running modes ----

def test_wait_for_returns_the_value_once_it_shows_up(fake):
    threading.Timer(0.2, send, (fake, 42, "later")).start()
    sent = fake.wait_for(lambda: fake.sent(42), timeout=5)
    assert [m["text"] for m in sent] == ["later"]
    assert fake.wait_for(lambda: fake.actions(42), timeout=0.1) == []


def test_updates_injected_from_many_threads_get_distinct_increasing_ids(fake):
    ids, lock = [], threading.Lock()

    def inject(user):
        for i in range(25):
            update_id = fake.user_message(user, str(i))
            with lock:
                ids.append(update_id)

    workers = [threading.Thread(target=inject, args=(u,)) for u in range(1, 9)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert sorted(ids) == list(range(min(ids), min(ids) + 200))
    got = api(fake, "getUpdates")[1]["result"]
    got += api(fake, "getUpdates", offset=got[-1]["update_id"] + 1)[1]["result"]
    assert [u["update_id"] for u in got] == sorted(ids)


def test_updates_expire_after_the_ttl():
    with FakeTelegram(update_ttl=0.2) as fake:
        fake.user_message(42, "stale")
        time.sleep(0.3)
        assert api(fake, "getUpdates")[1]["result"] == []


def test_stop_ends_a_held_poll_promptly():
    fake = FakeTelegram()
    fake.start()
    out, worker = in_background(exchange, fake.url, "getUpdates", {"timeout": 30})
    time.sleep(0.3)
    started = time.monotonic()
    fake.stop()
    worker.join(5)
    assert time.monotonic() - started < 3 and not worker.is_alive()
    fake.stop()  # twice is fine


def test_tls_mode_serves_https(tmp_path):
    paths = make_test_ca(tmp_path)
    with FakeTelegram(ssl_context=server_context(paths)) as fake:
        assert fake.url.startswith("https://localhost:")
        trusting = ssl.create_default_context(cafile=paths["ca.pem"])
        assert exchange(fake.url, "getMe", context=trusting)[0] == 200


def test_command_line_runs_in_the_foreground_and_announces_its_url():
    process = subprocess.Popen(
        [sys.executable, "-m", "host_sim.fake_telegram", "--port", "0", "--token", "9:T"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("fake Telegram Bot API on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        assert exchange(url, "getMe")[0] == 401
        status, _, body = exchange(url, "getMe", token="9:T")
        assert status == 200 and body["result"]["id"] == 9
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_a_poll_whose_client_gave_up_is_marked_gone(fake):
    with pytest.raises(OSError):  # socket.timeout: the client stops waiting first
        exchange(fake.url, "getUpdates", {"timeout": 20}, timeout=0.3)
    assert api(fake, "getUpdates")[0] == 200
    abandoned = fake.wait_for(lambda: fake.calls[0]["status"], timeout=5)
    assert abandoned == 409 and fake.calls[0].get("client_gone") is True
    assert "client_gone" not in fake.calls[1]
