# The tool loop from the outside: user tools on flash, rounds, parallel calls, limits, failures.
import json
import textwrap

import pytest

from host_sim.fake_anthropic import text, tool_use, tool_use_multi
from tests.e2e.conftest import API_KEY

DICE = '''
name = "roll_dice"
description = "Roll a die and return the number."
schema = {"type": "object", "properties": {"sides": {"type": "integer"}}, "required": []}

def run(input):
    return str(min(4, input.get("sides", 6)))
'''

HANDSHAKE = '''
import asyncio

_ready = asyncio.Event()


class _Wait:
    name = "wait_for_partner"
    description = "Waits until set_partner has run."
    schema = {"type": "object", "properties": {}}

    async def run(self, input):
        await _ready.wait()
        return "partner arrived"


class _Set:
    name = "set_partner"
    description = "Lets wait_for_partner finish."
    schema = {"type": "object", "properties": {}}

    async def run(self, input):
        _ready.set()
        return "done"


TOOLS = (_Wait(), _Set())
'''

FAILING = '''
name = "read_sensor"
description = "Read the greenhouse sensor."
schema = {"type": "object", "properties": {}}

def run(input):
    raise ValueError("sensor offline")
'''


@pytest.fixture
def tools_dir(flash):
    folder = flash / "tools"
    folder.mkdir(parents=True)
    return folder


def _write(folder, name, source):
    (folder / name).write_text(textwrap.dedent(source))


def _last_user_blocks(request):
    return request["body"]["messages"][-1]["content"]


def test_a_user_tool_is_discovered_and_used_and_broken_ones_are_skipped(tools_dir, boot, fake, flash):
    _write(tools_dir, "tool_dice.py", DICE)
    _write(tools_dir, "tool_broken.py", "def run(:\n")
    _write(tools_dir, "tool_nameless.py", "def run(input):\n    return 1\n")
    dev = boot()
    dev.pos = 0
    dev.expect(r"tools: skipping .*tool_broken\.py")
    dev.expect(r"tools: skipping .*: its name must be")
    listing = dev.command("tool_list")
    assert "roll_dice" in listing
    dev.command("set_api_key " + API_KEY)
    fake.script(tool_use("roll_dice", {"sides": 6}, text="Rolling."), text("You rolled a 4."))
    out = dev.command("chat roll a die", timeout=30)
    assert "Rolling." in out and "You rolled a 4." in out
    first, second = fake.wait_requests(2)
    names = [t["name"] for t in first["body"]["tools"]]
    assert "roll_dice" in names and "get_current_time" in names and _one_order(first["body"]["tools"])
    assigned = second["body"]["messages"][-2]
    assert assigned["role"] == "assistant" and assigned["content"][-1]["type"] == "tool_use"
    (result,) = _last_user_blocks(second)
    assert result["type"] == "tool_result" and result["content"] == "4" and result["is_error"] is False
    assert result["tool_use_id"] == assigned["content"][-1]["id"]
    # Only the user's text and the final reply are kept in the session.
    lines = [json.loads(x) for x in (flash / "data" / "sessions" / "cli_console.jsonl").read_text().splitlines()]
    assert [(x["role"], x["content"]) for x in lines] == [
        ("user", "roll a die"), ("assistant", "Rolling.\n\nYou rolled a 4.")]


def _one_order(tools):
    """The tools sorted by name: those in the model's context first, then those it finds with the tool search tool
    (deferred), so a request's tools are the same list every time."""
    loaded = [t["name"] for t in tools if not t.get("defer_loading")]
    held = [t["name"] for t in tools if t.get("defer_loading")]
    return [t["name"] for t in tools] == loaded + held and loaded == sorted(loaded) and held == sorted(held)


def test_tools_of_one_round_run_concurrently(tools_dir, boot, fake):
    _write(tools_dir, "tool_handshake.py", HANDSHAKE)
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    # wait_for_partner only finishes once set_partner has run: one after the other would time out.
    fake.script(tool_use_multi([("wait_for_partner", {}), ("set_partner", {})]), text("Both done."))
    assert "Both done." in dev.command("chat go", timeout=40)
    blocks = _last_user_blocks(fake.wait_requests(2)[1])
    assert [(b["content"], b["is_error"]) for b in blocks] == [("partner arrived", False), ("done", False)]


def test_a_failing_tool_reaches_the_model_as_an_error(tools_dir, device, fake):
    _write(tools_dir, "tool_sensor.py", FAILING)
    device.restart()  # tools are discovered at boot
    fake.script(tool_use("read_sensor", {}), text("The sensor seems to be offline."))
    assert "The sensor seems to be offline." in device.command("chat how warm is it?", timeout=30)
    (result,) = _last_user_blocks(fake.wait_requests(2)[1])
    assert result["is_error"] is True and "sensor offline" in result["content"]


def test_ten_rounds_then_one_answer_without_tools(tools_dir, device, fake):
    _write(tools_dir, "tool_dice.py", DICE)
    device.restart()
    fake.script(*[tool_use("roll_dice", {}) for _ in range(10)], text("I rolled ten times; enough."))
    assert "enough." in device.command("chat keep rolling", timeout=60)
    requests = fake.wait_requests(11)
    assert len(requests) == 11
    assert all("tool_choice" not in r["body"] for r in requests[:10])
    assert requests[10]["body"]["tool_choice"] == {"type": "none"}


def test_tool_definitions_and_system_prompt_are_identical_across_turns(tools_dir, device, fake):
    _write(tools_dir, "tool_dice.py", DICE)
    _write(tools_dir, "tool_sensor.py", FAILING)
    device.restart()
    fake.script(text("one"), text("two"))
    device.command("chat a")
    device.command("chat b")
    first, second = fake.wait_requests(2)
    assert json.dumps(first["body"]["tools"]) == json.dumps(second["body"]["tools"])
    assert json.dumps(first["body"]["system"]) == json.dumps(second["body"]["system"])
    assert _one_order(first["body"]["tools"])


def test_tool_exec_runs_a_tool_by_hand(tools_dir, boot):
    _write(tools_dir, "tool_dice.py", DICE)
    dev = boot()
    assert "3" in dev.command('tool_exec roll_dice \'{"sides": 3}\'')
    assert "field 'sides' must be of type integer" in dev.command("tool_exec roll_dice '{\"sides\": \"x\"}'")
    assert "must be JSON" in dev.command("tool_exec roll_dice nope")


def test_remember_a_fact_then_use_it_in_a_new_session(device, fake, flash):
    fake.script(tool_use("remember", {"text": "The owner's cat is called Miso."}), text("I'll remember that."))
    assert "I'll remember that." in device.command("chat my cat is called Miso", timeout=30)
    first_round, second_round = fake.wait_requests(2)
    (result,) = _last_user_blocks(second_round)
    assert result["is_error"] is False and "MEMORY.md" in result["content"]
    assert "Miso" in (flash / "data" / "memory" / "MEMORY.md").read_text()
    device.command("session_clear console")  # a new conversation: no history at all
    fake.script(text("Your cat is Miso."))
    device.command("chat what is my cat called?")
    last = fake.wait_requests(3)[-1]["body"]
    assert len(last["messages"]) == 1  # fresh session
    assert "The owner's cat is called Miso." in "".join(b["text"] for b in last["system"])


def test_file_tools_refuse_to_leave_the_data_folder(device, fake):
    fake.script(tool_use_multi([("read_file", {"path": "../nvs.json"}),
                                ("read_file", {"path": "/etc/passwd"}),
                                ("write_file", {"path": "certs/evil.der", "content": "x"})]),
                text("Those are off limits."))
    assert "off limits" in device.command("chat peek at the secrets", timeout=30)
    blocks = _last_user_blocks(fake.wait_requests(2)[1])
    assert [b["is_error"] for b in blocks] == [True, True, True]
    assert all("sk-ant" not in b["content"] for b in blocks)
