# Seeded random faults (host_sim/chaos.py): reproducible, every kind reachable, each one real.
import json
import subprocess
import sys
import time

import pytest

from host_sim.chaos import ANTHROPIC_KINDS, TELEGRAM_KINDS, Chaos
from host_sim.fake_anthropic import FakeAnthropic
from host_sim.fake_telegram import FakeTelegram
from tests.host.test_fake_anthropic import decoded, post, request_body, streamed_text
from tests.host.test_fake_telegram import ROOT, TERMINATED, exchange


def _schedule(seed, rate=0.3, steps=200):
    chaos = Chaos(seed, rate, telegram=FakeTelegram(), anthropic=FakeAnthropic())
    for _ in range(steps):
        chaos.step()
    return [(r["step"], r["kind"], r["detail"]) for r in chaos.injected]


def test_the_same_seed_injects_the_same_faults_at_the_same_steps():
    first = _schedule(7)
    assert first == _schedule(7)
    assert first != _schedule(8)
    assert 90 <= len(first) <= 150  # 200 steps x 2 fakes x 0.3 = 120, give or take


def test_a_seed_means_the_same_faults_with_one_fake_or_both():
    both = [r for r in _schedule(11) if r[1].startswith("tg_")]
    assert both
    alone = Chaos(11, 0.3, telegram=FakeTelegram())
    for _ in range(200):
        alone.step()
    assert [(r["step"], r["kind"]) for r in alone.injected] == [(s, k) for s, k, _ in both]
    assert [r["detail"] for r in alone.injected] == [d for _, _, d in both]


def test_rate_zero_injects_nothing_and_a_bad_rate_or_kind_is_refused():
    assert _schedule(3, rate=0.0) == []
    with pytest.raises(ValueError, match="probability"):
        Chaos(1, 1.5)
    with pytest.raises(ValueError, match="unknown fault kind"):
        Chaos(1, 0.5, telegram_kinds=("tg_meteor",))


def test_every_kind_is_reachable_from_a_seed():
    chaos = Chaos(1, 1.0, telegram=FakeTelegram(), anthropic=FakeAnthropic())
    for _ in range(300):
        chaos.step()
    assert set(chaos.counts()) == set(TELEGRAM_KINDS + ANTHROPIC_KINDS)
    assert sum(chaos.counts().values()) == len(chaos.injected) == 600


# ---- each Telegram kind is the fault it names, seen by a client ----

@pytest.fixture
def tg():
    with FakeTelegram(rate_limits=False) as fake:
        fake.add_chat(42)
        yield fake


def _poll(tg, timeout=0, offset=None):
    params = {"timeout": timeout}
    if offset is not None:
        params["offset"] = offset
    return exchange(tg.url, "getUpdates", params, timeout=10)


def test_telegram_http_errors_hit_a_method_drawn_by_the_seed(tg):
    chaos = Chaos(5, 1.0, telegram=tg, error_methods=("sendMessage",))
    for kind, status in (("tg_429", 429), ("tg_500", 500), ("tg_502", 502)):
        record = chaos.inject(kind)
        assert record["detail"] == {"method": "sendMessage", "status": status}
        got, headers, body = exchange(tg.url, "sendMessage", {"chat_id": 42, "text": "x"})
        assert got == status
        if status == 429:
            assert body["parameters"] == {"retry_after": 1} and headers["retry-after"] == "1"
        if status == 502:
            assert "<html>" in body.lower()  # the proxy's page, not JSON
    assert tg.sent(42) == []
    assert exchange(tg.url, "sendMessage", {"chat_id": 42, "text": "x"})[0] == 200


def test_telegram_conflict_malformed_and_duplicate(tg):
    chaos = Chaos(5, 1.0, telegram=tg)
    chaos.inject("tg_409")
    status, _, body = _poll(tg)
    assert status == 409 and body["description"] == TERMINATED
    update_id = tg.user_message(42, "hi")
    chaos.inject("tg_malformed")
    status, _, body = _poll(tg)
    assert status == 200 and isinstance(body, str)  # not JSON: cut short
    chaos.inject("tg_duplicate")
    first = _poll(tg)[2]["result"]
    again = _poll(tg, offset=update_id + 1)[2]["result"]
    assert [u["update_id"] for u in first] == [update_id]
    assert [u["update_id"] for u in again] == [update_id]  # delivered twice


def test_telegram_reset_during_a_long_poll_and_a_slow_answer(tg):
    chaos = Chaos(5, 1.0, telegram=tg, slow_seconds=1.5)
    chaos.inject("tg_reset_poll")
    tg.user_message(42, "hi")
    with pytest.raises(Exception):
        _poll(tg, timeout=5)
    assert tg.calls[-1]["fault"] == "reset"
    record = chaos.inject("tg_slow")
    assert record["detail"] == {"method": "getUpdates", "seconds": 1.5}
    with pytest.raises(Exception):  # the client gives up before the fake answers
        exchange(tg.url, "getUpdates", {"timeout": 0}, timeout=0.5)
    time.sleep(1.3)
    assert tg.wait_for(lambda: tg.calls[-1]["status"] is not None, 3)
    assert tg.calls[-1].get("client_gone")


# ---- each Anthropic kind is the fault it names, seen by a client ----

@pytest.fixture
def claude():
    with FakeAnthropic() as fake:
        yield fake


def test_anthropic_http_errors_carry_the_real_status_and_retry_after(claude):
    chaos = Chaos(2, 1.0, anthropic=claude)
    for kind in ("an_401", "an_403", "an_404", "an_413", "an_429", "an_500", "an_529"):
        chaos.inject(kind)
        status, headers, body, _ = post(claude.url, request_body())
        assert status == int(kind[3:]) and json.loads(body)["type"] == "error"
        assert ("retry-after" in headers) == (kind == "an_429")
    assert claude.pending == 0


def test_anthropic_stream_faults(claude):
    chaos = Chaos(2, 1.0, anthropic=claude, stall_seconds=0.3)
    chaos.inject("an_stream_error")
    events = decoded(post(claude.url, request_body())[2])
    assert events[-1][0] == "error" and events[-1][1]["error"]["type"] == "overloaded_error"
    chaos.inject("an_cut")
    status, _, data, complete = post(claude.url, request_body())
    assert status == 200 and not complete and b"message_stop" not in data
    record = chaos.inject("an_stall")
    started = time.monotonic()
    events = decoded(post(claude.url, request_body())[2])
    assert time.monotonic() - started >= 0.3
    assert streamed_text(events).startswith("Chaos") and events[-1][0] == "message_stop"
    chaos.inject("an_garbage")
    data = post(claude.url, request_body())[2]
    assert b"future_thing" in data and streamed_text(decoded(data)).startswith("Chaos")
    record = chaos.inject("an_long_line")
    data = post(claude.url, request_body())[2]
    assert max(len(line) for line in data.split(b"\n")) == record["detail"]["bytes"] > 16384


def test_the_fakes_take_chaos_options_on_their_command_lines():
    proc = subprocess.Popen(
        [sys.executable, "-m", "host_sim.fake_telegram", "--port", "0", "--chaos-seed", "4",
         "--chaos-rate", "1", "--chaos-interval", "0.1"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(4)]
    finally:
        proc.kill()
        proc.wait(5)
    assert lines[0].startswith("fake Telegram Bot API on http://")
    expected = Chaos(4, 1.0, telegram=FakeTelegram())
    kinds = [expected.step()[0]["kind"] for _ in range(3)]
    assert [line.split()[3] for line in lines[1:]] == kinds
