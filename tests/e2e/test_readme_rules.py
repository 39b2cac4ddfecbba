# The README's rule examples pasted into a fresh firmware as a user types them (#33): every block marked
# `<!-- rule example: <name> ... -->` in README.md or a page of docs/ is found by its marker, wherever the text
# moves; each `mimi>` line is typed, each line printed under it must be what the console prints, and the rule
# then does what the text around it says.
import glob
import json
import os
import re
import time

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY
from tests.runtimes import ROOT

EXAMPLES = ("door", "fan", "fan_cmd")


def rule_examples():
    """{name: (the paragraph before its marker, the code block after it)} for every marked rule example."""
    found = {}
    for page in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(page, encoding="utf-8") as f:
            lines = f.read().split("\n")
        for at, line in enumerate(lines):
            marked = re.match(r"<!-- rule example: (\w+)", line)
            if not marked:
                continue
            start = at - 1
            while start > 0 and lines[start - 1].strip():
                start -= 1
            assert lines[at + 1].startswith("```"), "{}: the block must follow its marker".format(marked.group(1))
            end = lines.index("```", at + 2)
            found[marked.group(1)] = ("\n".join(lines[start:at]), "\n".join(lines[at + 2:end]))
    assert sorted(found) == sorted(EXAMPLES), sorted(found)
    return found


def _sensors(tmp_path, readings):
    path = tmp_path / "sensors.json"
    path.write_text(json.dumps(readings))
    return path


def _paste(dev, block):
    """Type the block's `mimi> ` lines in order; every line printed under one is a line of what it printed."""
    steps = []
    for line in block.split("\n"):
        if line.startswith("mimi> "):
            steps.append((line[len("mimi> "):], []))
        else:
            steps[-1][1].append(line)
    for typed, printed in steps:
        out = dev.command(typed).replace("\r", "").split("\n")
        for line in printed:
            assert line in out, "{!r} printed {!r}, not {!r}".format(typed, out, line)


def _pin5(dev):
    return json.loads(dev.command('tool_exec gpio_read {"pin": 5}').strip().split("\n")[-1])["value"]


def _until(check, seconds):
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.2)
    return check()


def test_the_fan_example_works_as_printed_and_switches_once_per_heat_wave(boot, tmp_path):
    sensors = _sensors(tmp_path, {"temperature": 41})  # a resting chip, as make sim's
    dev = boot(env={"MIMI_SIM_SENSORS": str(sensors)})
    _paste(dev, rule_examples()["fan"][1])
    mark = len(dev.output)
    sensors.write_text(json.dumps({"temperature": 61}))
    dev.expect(r"notice: chip at 61 C: fan on", timeout=20)
    assert _pin5(dev) == 1
    time.sleep(6)  # another reading, still hot: the rule fired once for this heat wave
    assert dev.output[mark:].count("fan on") == 1
    sensors.write_text(json.dumps({"temperature": 54}))
    assert _until(lambda: _pin5(dev) == 0, 20), dev.output[-2000:]  # off on the way down


def test_the_owner_command_example_works_as_printed(boot, fake):
    dev = boot()
    _paste(dev, rule_examples()["fan_cmd"][1])
    assert _pin5(dev) == 1
    out = dev.command("fan off")
    assert 'mimi: gpio_write: {"pin": 5, "value": 0}' in out and "\nfan off" in out and _pin5(dev) == 0
    assert len(fake.requests) == 0  # the board answered by itself


def test_the_door_example_works_as_printed(boot, fake, tmp_path):
    before, block = rule_examples()["door"]
    sensors = _sensors(tmp_path, {"gpio": {"4": 0}})
    dev = boot(env={"MIMI_SIM_SENSORS": str(sensors)})
    dev.command("set_api_key " + API_KEY)
    allowed = re.findall(r"`(gpio_allow \d+)`", before)
    assert allowed == ["gpio_allow 4", "gpio_allow 5"]
    for line in allowed:  # what the paragraph asks of the owner first
        dev.command(line)
    fake.script(tool_use("watch_add", json.loads(block)), text("Done: the porch light follows the door."))
    assert "Done: the porch light" in dev.command("chat when the door opens, switch on the porch light (GPIO 5) "
                                                  "and tell me", 30)
    result = fake.wait_requests(2)[1]["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and not result.get("is_error"), result
    sensors.write_text(json.dumps({"gpio": {"4": 1}}))  # the door opens
    dev.expect(r"notice: door open", timeout=10)
    assert _pin5(dev) == 1 and len(fake.requests) == 2  # no request to the model between the edge and the act
