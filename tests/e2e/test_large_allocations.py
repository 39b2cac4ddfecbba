# No single large allocation on a turn's path (#25 item 3). The turns run in the MicroPython unix port on a heap
# whose largest free hole is 4.5 KB (holes_turn.py: the free heap taken in blocks, every other one freed): ample
# room in all, but any larger single allocation raises MemoryError naming its size, and the loop that survives it
# prints where (the driver traces memory_errors.short). A 4 KB Telegram message in, the context and the Anthropic
# request, 9 KB streamed replies with markup, a tool round, the sessions written and read back, the replies
# delivered on Telegram (three messages each) and on the console: none may fail. 4.5 KB, not 4: one Telegram
# message is the one allocation above 4 KB a turn needs (up to 4096 characters, Telegram's limit, with its HTML
# tags: 4201 bytes here), bounded by Telegram itself.
import subprocess
import threading

import pytest

from host_sim.fake_anthropic import FakeAnthropic, text, tool_use
from host_sim.fake_telegram import FakeTelegram
from tests.e2e.conftest import API_KEY, TG_TOKEN, free_port
from tests.runtimes import MICROPYTHON, ROOT, micropython_firmware, romfs_firmware

OWNER = 42
# Heaps with ample room: the free half of the heap the firmware leaves is what the holes give (the ROMFS form's
# images sit in the heap on the unix port, so it gets more)
HEAPS = {"micropython": "1024K", "romfs": "1536K"}
# A long reply in paragraphs with markup (9 KB: three Telegram messages), as in the issue.
LONG = "\n\n".join("Paragraph {}: **bold** and `code` and _this_, ".format(i) + "word " * 290 for i in range(6))
LONG_ASK = "Tell me everything. " * 200  # a 4 KB message in


@pytest.fixture(params=["micropython", "romfs"])
def lib(request, tmp_path):
    if request.param == "micropython":  # the .mpy bundle (MIMI_MP_SOURCE=1: the sources)
        return [HEAPS["micropython"], (micropython_firmware() or ["", "firmware"])[1]]
    args = romfs_firmware(tmp_path / "flash")  # --romfs <partition> --standins-rom <image>
    return [HEAPS["romfs"], "romfs:" + args[1], args[3]]


class _Driver:
    def __init__(self, lib, flash, api, tg_url, n_tg):
        cmd = [MICROPYTHON[0], "-X", "heapsize=" + lib[0], "tests/e2e/holes_turn.py", lib[1], str(flash), api,
               API_KEY, tg_url, TG_TOKEN, str(free_port()), str(n_tg)] + lib[2:]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.lines = []
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.append(line.decode("utf-8", "replace"))

    @property
    def output(self):
        return "".join(self.lines)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)


def test_a_turn_makes_no_allocation_over_4_kb(lib, tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir(exist_ok=True)
    anthropic, tg = FakeAnthropic(api_key=API_KEY), FakeTelegram(token=TG_TOKEN)
    anthropic.start()
    tg.start()
    driver = None
    try:
        anthropic.script(text("Hello."),  # the first turn, before the heap is cut into holes
                         text(LONG, chunk=300),
                         tool_use("get_current_time", {}), text(LONG, chunk=200),
                         text(LONG, chunk=250),
                         text(LONG, chunk=300))  # the console's turn
        tg.user_message(OWNER, "hi")
        driver = _Driver(lib, flash, anthropic.url, tg.url, 3)
        assert tg.wait_for(lambda: tg.sent(OWNER), 60), driver.output[-3000:]
        assert tg.wait_for(lambda: "FRAGMENTED" in driver.output, 60), driver.output[-3000:]
        sent = len(tg.sent(OWNER))
        for ask in ("a long answer, please", "what time is it? and more", LONG_ASK):
            tg.user_message(OWNER, ask)
            assert tg.wait_for(lambda: len(tg.sent(OWNER)) >= sent + 3, 90), driver.output[-5000:]
            sent = len(tg.sent(OWNER))
        assert tg.wait_for(lambda: "CONSOLE TURN DONE" in driver.output, 90), driver.output[-5000:]
    finally:
        if driver is not None:
            driver.stop()
        anthropic.stop()
        tg.stop()
    out = driver.output
    print("\n".join(line[:300] for line in out.splitlines() if "word word word" not in line))
    assert "memory allocation failed" not in out and "ALLOC FAILED" not in out, out[-6000:]
    assert "failures=0" in out
    fragmented = [line for line in out.splitlines() if line.startswith("FRAGMENTED")][0]
    # the heap was really cut: holes of 4.5 KB, one a little larger where a freed block meets a gap (4768 seen)
    assert int(fragmented.split("largest=")[1]) < 4864
