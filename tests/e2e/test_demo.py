# `make sim`'s offline demo brain, end to end under both runtimes: labelled replies without the
# [context] line, and a tool round (get_current_time, remember) through the real agent loop.
import time

import pytest

from host_sim import demo_brain
from host_sim.fake_anthropic import FakeAnthropic
from tests.e2e.conftest import API_KEY
DEMO_MODEL = "offline-demo"  # what tools/sim.py passes (--model) in make sim's demo


@pytest.fixture(scope="module")
def demo():
    fake = FakeAnthropic(api_key=API_KEY, brain=demo_brain.reply)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def sim(boot, demo):
    demo.reset()
    dev = boot("--model", DEMO_MODEL, api=demo.url)  # as make sim starts it (tools/sim.py)
    assert "saved" in dev.command("set_api_key " + API_KEY)
    return dev


def test_the_demo_says_what_it_is_and_echoes_only_what_was_typed(sim):
    out = sim.command("chat hello")
    assert "mimi: (offline demo: no API key set) You said: hello\n" in out
    assert "[context]" not in out


def test_what_time_is_it_runs_get_current_time(sim, demo):
    out = sim.command("chat what time is it?")
    assert "mimi: (offline demo: no API key set) Let me look at the board's clock." in out
    assert "The tool get_current_time answered: It is " in out
    # Each round on a line of its own, the agent's log line between them, nothing repeated.
    assert ("board's clock.\nagent: tool get_current_time requested\n"
            "mimi: The tool get_current_time answered: It is ") in out
    assert out.count("Let me look") == 1
    assert " UTC on " in out and "(the board's clock)" in out
    first, second = demo.wait_requests(2)
    assert second["body"]["messages"][-1]["content"][0]["type"] == "tool_result"


def test_remember_writes_memory_through_the_remember_tool(sim, flash):
    out = sim.command("chat remember I'm Bob and I like tea")
    assert "The tool remember answered: saved to MEMORY.md" in out
    assert "I'm Bob and I like tea" in (flash / "data" / "memory" / "MEMORY.md").read_text()
    assert "I'm Bob and I like tea" in sim.command("memory_read")


def test_status_and_usage_name_the_demo_and_bill_nothing(sim):
    sim.command("chat hello")
    status = sim.command("status")
    assert "Claude: the offline demo brain (make sim without ANTHROPIC_API_KEY" in status and "it answers" in status
    assert "key set" not in status
    usage = sim.command("usage")
    assert "offline demo (make sim's stand-in: not billed)" in usage, usage
    assert "about $0.0000" in usage and "price unknown" not in usage


def test_a_watcher_judged_by_the_demo_stays_quiet(sim):
    assert "watching" in sim.command("watch_add attic temperature 3600 tell me if the attic gets hot")
    deadline = time.monotonic() + 30
    listed = sim.command("watch_list")
    while "last: " not in listed and time.monotonic() < deadline:  # judged a few seconds after it was added
        time.sleep(0.5)
        listed = sim.command("watch_list")
    assert "WATCH_OK" in listed and "told" not in listed and "You said" not in listed
    assert "notice:" not in sim.output and "[watcher attic" not in sim.output  # nothing said, no prompt echoed
