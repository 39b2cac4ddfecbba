# A MemoryError in a background tick is not a reset (#25): the main loop (the watchdog's tick) and the WiFi
# keeper survive theirs, the console and the owner on Telegram are told once per loop, the next message is
# answered; a stuck agent still resets the board, as the health rules say. The faults come from the machine
# stand-in (MIMI_SIM_MEMORY_ERRORS: the first N calls at a point raise MemoryError).
import json
import time

import pytest

from host_sim.fake_anthropic import stall, text
from tests.e2e.conftest import API_KEY, TG_TOKEN
from tests.runtimes import RUNTIMES_WITH_ROMFS_TELEGRAM

OWNER = 42
TIMES = 3  # MemoryErrors at each point, a second or more apart: one notice each


@pytest.fixture(params=sorted(RUNTIMES_WITH_ROMFS_TELEGRAM))
def runtime(request):
    return RUNTIMES_WITH_ROMFS_TELEGRAM[request.param]


def _notices(tg, words):
    return [m["shown"] for m in tg.sent(OWNER) if words in m["shown"]]


def test_memory_errors_in_background_ticks_are_survived_told_once_and_only_a_stuck_agent_resets(
        boot, tg, fake, tmp_path):
    faults = tmp_path / "memory_errors.json"
    faults.write_text("{}")
    # a watchdog of 8 s: three ticks in a row that cannot feed it (3 s) stay within it on a loaded machine too; so
    # does a turn's time there, under the 6 s after which a turn is stuck
    dev = boot("--telegram-api", tg.url, "--health", "wdt_ms=8000,turn_s=6,healthy_s=2",
               env={"MIMI_SIM_MEMORY_ERRORS": str(faults)})
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TG_TOKEN, "tg_allow {} owner".format(OWNER)):
        dev.command(line)
    fake.script(text("Hello."))
    tg.user_message(OWNER, "hi")  # the owner's chat with the bot exists (Telegram needs it for a notice)
    assert tg.wait_for(lambda: tg.sent(OWNER), 30), dev.output[-3000:]
    dev.expect(r"health: healthy boot", 30)
    faults.write_text(json.dumps({"wdt_feed": TIMES, "wlan_isconnected": TIMES}))
    mark = dev.pos
    for point in ("wdt_feed", "wlan_isconnected"):  # in either order
        dev.pos = mark
        dev.expect(r"sim: MemoryError injected at {} \(3 of 3\)".format(point), 30)
    assert tg.wait_for(lambda: len(_notices(tg, "ran short of memory")) >= 2, 20), dev.output[-3000:]
    time.sleep(2)  # anything more (a notice per error) would show by now; a watchdog bite is counted at the end

    out = dev.output
    for loop in ("main loop", "WiFi keeper"):
        assert out.count("notice: The device ran short of memory in its {} and carried on".format(loop)) == 1
        assert out.count("memory: MemoryError in the {} (memory allocation failed".format(loop)) == 1
        assert len(_notices(tg, "in its {} and carried on: nothing was restarted".format(loop))) == 1
    assert "--- reset ---" not in out and "crash:" not in out and "watchdog:" not in out

    fake.script(text("Still here, all fine."))
    tg.user_message(OWNER, "are you alright?")
    assert tg.wait_for(lambda: any("Still here" in m["shown"] for m in tg.sent(OWNER)), 30), dev.output[-3000:]

    fake.script(stall("Thinking", seconds=30))  # the agent stuck on a turn: the reset the health rules give
    dev.send("chat think hard")
    dev.expect(r"watchdog: the agent has been stuck on one turn for over 6 s; no longer feeding it", 30)
    dev.expect("--- reset ---", 15)
    dev.expect(r"health: the watchdog reset the device \(crash 1 in a row\)", 15)
    assert dev.output.count("--- reset ---") == 1  # the stuck turn's: the watchdog never bit over the MemoryErrors
