# Memory that consolidates itself, from the outside: a long session summarised once, kills mid-way.
import json
import re
import time

from host_sim.fake_anthropic import stall, text, tool_use_multi
from tests.e2e.conftest import API_KEY, OWNER_ID, TG_TOKEN

SUMMARY = "Earlier the user counted questions from zero to ten with Mimi."
FACT = "The owner counts everything."
PAIRS = 11  # 22 messages on flash: one more turn passes the cap of 20


def _seed(flash, stem="cli_console", said="question"):
    sessions = flash / "data" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(PAIRS):
        lines.append(json.dumps({"role": "user", "content": "{} {}".format(said, i), "ts": 1760000000 + i}))
        lines.append(json.dumps({"role": "assistant", "content": "answer {}".format(i), "ts": 1760000000 + i}))
    (sessions / (stem + ".jsonl")).write_text("\n".join(lines) + "\n")


def _session(flash, stem="cli_console"):
    path = flash / "data" / "sessions" / (stem + ".jsonl")
    return [json.loads(line)["content"] for line in path.read_text().splitlines() if line.strip()]


def _notes(flash):
    daily = flash / "data" / "memory" / "daily"
    return "".join(p.read_text() for p in sorted(daily.glob("*.md"))) if daily.exists() else ""


def _summary_requests(fake):
    return [r for r in fake.requests if isinstance(r["body"], dict) and "condense" in str(r["body"].get("system"))]


def _wait(predicate, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_a_long_session_is_summarised_once_into_the_daily_note_and_shrinks(boot, fake, flash):
    _seed(flash)
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    fake.script(text("Reply twelve."), text("SUMMARY: " + SUMMARY))
    out = dev.command("chat question eleven", timeout=30)
    assert "Reply twelve." in out
    dev.expect(r"consolidate: cli_console: \d+ older messages summarised", 30)
    asked = _summary_requests(fake)
    assert len(asked) == 1
    body = asked[0]["body"]
    assert "tools" not in body and body["max_tokens"] == 500  # one bounded call (SUMMARY_TOKENS)
    transcript = body["messages"][0]["content"]
    assert "question 0" in transcript and "answer 5" in transcript
    kept = _session(flash)
    assert len(kept) <= 12 and kept[-2:] == ["question eleven", "Reply twelve."]
    assert all(("question {}".format(i) in transcript) or ("question {}".format(i) in kept)
               for i in range(PAIRS))  # every turn is either summarised or still in the session
    assert _notes(flash).count(SUMMARY) == 1
    fake.script(text("Reply thirteen."))
    dev.command("chat and again", timeout=30)
    assert len(_summary_requests(fake)) == 1  # under the cap again: no second summary
    # The next turn shows the model the shorter history and the summary in the daily notes.
    last = fake.requests[-1]["body"]
    assert SUMMARY in json.dumps(last["system"])
    assert "question 0" not in json.dumps(last["messages"])
    out = dev.command("memory_consolidate")  # by hand: whatever lies beyond the newest 10 messages
    assert "cli_console: 2 older messages summarised" in out and len(_session(flash)) == 10
    assert "nothing to consolidate" in dev.command("memory_consolidate console")


def test_killed_during_the_summary_call_then_summarised_once(boot, fake, flash):
    _seed(flash)
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    fake.script(text("Reply twelve."), stall("", seconds=60, before_headers=True))
    dev.command("chat question eleven", timeout=30)
    assert _wait(lambda: [r for r in _summary_requests(fake) if "body_read_at" in r])
    dev.stop()  # the power goes while Claude writes the summary
    assert _notes(flash).count(SUMMARY) == 0 and len(_session(flash)) == 2 * PAIRS + 2  # nothing lost
    again = boot()
    fake.script(text("Reply thirteen."), text("SUMMARY: " + SUMMARY))
    again.command("chat one more", timeout=30)
    again.expect(r"consolidate: cli_console: \d+ older messages summarised", 30)
    assert _notes(flash).count(SUMMARY) == 1
    kept = _session(flash)
    assert kept[-2:] == ["one more", "Reply thirteen."] and len(kept) <= 12


def test_killed_while_a_fact_waits_for_confirmation_finishes_once_after_the_reboot(boot, fake, flash):
    _seed(flash)
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    dev.command("tool_policy remember confirm")
    fake.script(text("Reply twelve."), text("SUMMARY: {}\nFACT: {}".format(SUMMARY, FACT)))
    dev.send("chat question eleven")
    dev.expect(re.escape("confirm: May I run remember with"), 30)
    dev.stop()  # the summary is in the note, the session not yet trimmed
    assert _notes(flash).count(SUMMARY) == 1
    assert len(_session(flash)) == 2 * PAIRS + 2  # nothing dropped yet
    again = boot()
    fake.script(text("Reply thirteen."))
    again.send("chat one more")
    again.expect(re.escape("confirm: May I run remember with"), 30)  # the journal finishes the same summary
    again.send("y")
    again.expect(r"consolidate: cli_console: \d+ older messages summarised", 30)
    assert len(_summary_requests(fake)) == 1  # one Claude call for the summary, across the kill
    assert _notes(flash).count(SUMMARY) == 1
    memory = (flash / "data" / "memory" / "MEMORY.md").read_text()
    assert memory.count(FACT) == 1
    kept = _session(flash)
    assert kept[-2:] == ["one more", "Reply thirteen."] and "question 0" not in kept


OBSERVER = 9
GUEST_SUMMARY = "Earlier the guest asked Mimi about trains to Porto."
OWNERS_LINE = "The owner's safe code is 2468."


def test_an_observers_long_chat_is_summarised_into_that_chat_alone_and_the_owners_memory_is_kept_from_it(
        boot, fake, tg, flash):
    _seed(flash, "telegram_{}".format(OBSERVER), "guest question")
    (flash / "data" / "memory").mkdir(parents=True, exist_ok=True)
    (flash / "data" / "memory" / "MEMORY.md").write_text("# Memory\n\n- " + OWNERS_LINE + "\n")
    dev = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TG_TOKEN, "tg_allow {} owner".format(OWNER_ID),
                 "tg_allow {} observer".format(OBSERVER)):
        dev.command(line)
    fake.script(tool_use_multi([("read_file", {"path": "memory/MEMORY.md"}, None), ("recall", {"query": "safe"}, None),
                                ("read_file", {"path": "config/USER.md"}, None)]),
                text("I cannot see that."), text("SUMMARY: {}\nFACT: The guest likes trains.".format(GUEST_SUMMARY)))
    tg.user_message(OBSERVER, "what is the owner's safe code?")
    assert tg.wait_for(lambda: any("I cannot see that." in m["shown"] for m in tg.sent(OBSERVER)), 30), dev.output
    dev.expect(r"consolidate: telegram_9: \d+ older messages summarised into the chat itself", 30)
    asked, answered, summarised = [r["body"] for r in fake.wait_requests(3)]
    # The observer's turn: the owner's memory is not in its prompt, and no tool reads it for it.
    assert OWNERS_LINE not in json.dumps(asked["system"]) and "2468" not in json.dumps(answered)
    results = answered["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True, True], results
    assert "only the owner may read" in results[0]["content"] and "needs the owner role" in results[1]["content"]
    assert "only the owner may read" in results[2]["content"]
    # Its older turns: summarised into its own chat, with no facts asked for; nothing reaches the shared files.
    assert "condense" in json.dumps(summarised["system"]) and "FACT" not in json.dumps(summarised["system"])
    assert GUEST_SUMMARY not in _notes(flash) and "guest question" not in _notes(flash)
    memory = (flash / "data" / "memory" / "MEMORY.md").read_text()
    assert GUEST_SUMMARY not in memory and "likes trains" not in memory
    kept = _session(flash, "telegram_9")
    assert kept[:2] == ["[earlier in this chat]", "Summary of the earlier part of this chat: " + GUEST_SUMMARY]
    assert kept[-2:] == ["what is the owner's safe code?", "I cannot see that."] and "guest question 0" not in kept
    assert len(kept) <= 14
    # The guest's next turn is shown that summary (its own context); the owner's shows the owner's memory alone.
    fake.script(text("Trains, yes."))
    tg.user_message(OBSERVER, "and the trains?")
    assert tg.wait_for(lambda: any("Trains, yes." in m["shown"] for m in tg.sent(OBSERVER)), 30), dev.output
    assert GUEST_SUMMARY in json.dumps(fake.requests[-1]["body"]["messages"][1])
    fake.script(text("Hello, owner."))
    assert "Hello, owner." in dev.command("chat hello", timeout=30)
    owners = fake.requests[-1]["body"]
    assert OWNERS_LINE in json.dumps(owners["system"]) and GUEST_SUMMARY not in json.dumps(owners)
