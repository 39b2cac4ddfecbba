# Every wait has a limit: a silent or endless Claude stream ends in a clear message, and the device goes on.
import json

from host_sim.fake_anthropic import stall, text
from tests.e2e.conftest import API_KEY

SHORT = ("--health", "claude_first_byte_s=2,claude_idle_s=2,claude_deadline_s=6")


def _configured(boot):
    dev = boot(*SHORT)
    assert "saved" in dev.command("set_api_key " + API_KEY)
    return dev


def test_an_api_silent_before_its_status_line_is_retried_after_the_first_byte_limit(boot, fake):
    dev = _configured(boot)
    fake.script(stall(seconds=20, before_headers=True), text("Second try worked."))
    assert "Second try worked." in dev.command("chat are you there", timeout=40)
    assert "Claude: network; retrying" in dev.output


def test_a_stream_that_goes_silent_mid_reply_is_reported_and_the_next_turn_works(boot, fake, flash):
    dev = _configured(boot)
    fake.script(stall("The first half", seconds=20, text_after=" and the rest."), text("Fresh answer."))
    out = dev.command("chat tell me", timeout=40)
    assert "The first half" in out
    assert "broke before the reply was complete (timed out reading from 127.0.0.1 after 2 s)" in out
    assert "Fresh answer." in dev.command("chat again", timeout=30)
    lines = (flash / "data" / "sessions" / "cli_console.jsonl").read_text().splitlines()
    # The broken turn is not saved as if it had been answered; the good one is.
    assert [json.loads(line)["content"] for line in lines] == ["again", "Fresh answer."]


def test_a_stream_that_never_ends_is_cut_at_the_whole_reply_deadline(boot, fake):
    dev = _configured(boot)
    # A text delta every second keeps the idle limit happy; the 6 s deadline still ends it.
    long_reply = " ".join("word{}".format(i) for i in range(40))
    fake.script(text(long_reply, chunk=6, delay=1.0), text("Still here."))
    out = dev.command("chat a long one", timeout=40)
    assert "took longer than the whole-request limit of 6 s" in out
    assert long_reply not in out
    assert "Still here." in dev.command("chat ok?", timeout=30)
