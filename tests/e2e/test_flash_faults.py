# Flash faults from the outside: a full LittleFS flash, and the firmware killed (SIGKILL) while it writes.
import json
import random
import re
import time

from host_sim import lfs_flash
from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY
from tests.e2e.device import Device
from tests.runtimes import RUNTIMES

IMAGE_SIZE = 256 * 1024  # 64 blocks: a clean-up frees 32 KB (an eighth)
LINE_MAX = 1024  # bytes of one console line (firmware/mimi/channels/line_editor.py)
MEMORY = b"# Memory\n\nLong-term notes about my owner, one per line.\n- [2026-01-02] likes green tea\n"
OLD_NOTE = b"- fed the cat\n"
SOUL = b"# Mimi\n\nYou are Mimi, a small personal assistant.\n"
USER = b"# About my owner\n\n- Name: Ada\n"
NOTICE = "notice: flash full: "



def _line(text):
    """As much of a long chat as a console line holds (1,024 bytes; a longer line is refused, not run)."""
    return text[:LINE_MAX]

def _session_line(ts, content):
    return json.dumps({"role": "user", "content": content, "ts": ts}) + "\n"


def _old_session(i):
    # ~7 KB of valid history per chat, the chat's last message older the smaller i is
    return "".join(_session_line(1700000000 + i * 1000 + n, "old message {} of chat {} ".format(n, i) + "z" * 600)
                   for n in range(11)).encode()


def _full_image(path, extra=None):
    contents = {"data/memory/MEMORY.md": MEMORY, "data/memory/daily/2025-12-24.md": OLD_NOTE,
                "data/config/SOUL.md": SOUL, "data/config/USER.md": USER, "data/certs/": None}
    contents.update(extra or {})
    return lfs_flash.put_files(str(path), IMAGE_SIZE, contents,
                               ("data/sessions", _old_session, lambda i: "telegram_{}.jsonl".format(100 + i)))


def _valid_lines(data):
    lines = data.decode().split("\n")
    assert lines[-1] == "", "a session file ends with a complete line"
    return [json.loads(line) for line in lines[:-1]]


def test_full_flash_trims_old_conversations_tells_the_owner_once_and_keeps_answering(boot, fake, flash, tmp_path):
    image = tmp_path / "flash.img"
    old = _full_image(image)
    assert len(old) >= 20
    dev = boot("--flash-image", str(image))
    assert "mounted" in dev.output and "first boot" not in dev.output
    assert "saved" in dev.command("set_api_key " + API_KEY)
    replies = ["Reply number {}: ".format(i) + "r" * 2500 for i in range(4)]
    fake.script(*[text(r) for r in replies])
    for i, reply in enumerate(replies):
        out = dev.command(_line("chat question {} ".format(i) + "q" * 1500), timeout=40)
        assert "Reply number {}:".format(i) in out  # every turn is answered, full flash or not
    notices = [line for line in dev.output.splitlines() if line.startswith(NOTICE)]
    assert len(notices) == 1, dev.output[-3000:]
    removed = int(re.search(r"removed (\d+) old conversations", notices[0]).group(1))
    assert 3 <= removed <= 8  # room for the new ones, not a wipe
    assert "MEMORY.md, SOUL.md, USER.md and the settings are never removed" in notices[0]
    dev.stop()
    after = lfs_flash.image_files(str(image))
    assert after["data/memory/MEMORY.md"] == MEMORY
    assert after["data/memory/daily/2025-12-24.md"] == OLD_NOTE  # conversations go first
    assert after["data/config/SOUL.md"] == SOUL and after["data/config/USER.md"] == USER
    sessions = sorted(n for n in after if n.startswith("data/sessions/telegram_"))
    gone = sorted(set(old) - set(sessions))
    assert len(gone) == removed and gone == sorted(old, key=lambda n: int(n.rsplit("_", 1)[1][:-6]))[:removed]  # the oldest
    saved = _valid_lines(after["data/sessions/cli_console.jsonl"])
    assert [m["role"] for m in saved] == ["user", "assistant"] * 4
    assert [m["content"] for m in saved[1::2]] == replies
    assert not [n for n in after if n.endswith(".tmp")]


def test_nothing_to_remove_the_reply_still_comes_and_the_owner_hears_what_was_not_saved(boot, fake, tmp_path):
    image = tmp_path / "flash.img"
    # The flash is full of what the policy never touches: the owner's tools (here: big ones).
    lfs_flash.put_files(str(image), IMAGE_SIZE, {"data/memory/MEMORY.md": MEMORY,
                        "data/config/SOUL.md": SOUL, "data/config/USER.md": USER,
                        "data/sessions/": None, "data/memory/daily/": None, "data/certs/": None}, (
        "tools", lambda i: b"# padding\n" + b"#" * 8000 + b"\n", lambda i: "pad_{}.txt".format(i)))
    dev = boot("--flash-image", str(image))
    assert "saved" in dev.command("set_api_key " + API_KEY)
    fake.script(text("First answer " + "a" * 3000), text("Second answer " + "b" * 3000))
    assert "First answer" in dev.command(_line("chat hello " + "h" * 3000), timeout=40)
    assert "Second answer" in dev.command(_line("chat again " + "h" * 3000), timeout=40)
    notices = [line for line in dev.output.splitlines() if line.startswith(NOTICE)]
    assert notices == ["notice: flash full: could not save the conversation cli_console; nothing more can be "
                       "removed (MEMORY.md, SOUL.md, USER.md and the settings are never removed); clear "
                       "conversations (session_clear) or delete files"]
    dev.stop()
    after = lfs_flash.image_files(str(image))
    assert after["data/memory/MEMORY.md"] == MEMORY
    assert len([n for n in after if n.startswith("tools/pad_")]) >= 20
    assert not [n for n in after if n.endswith(".tmp")]


# ---- power loss: SIGKILL at seeded random points while the firmware writes ----

ROUNDS = 4
KILL_WINDOW_S = (0.2, 2.5)


def _burst(dev, round_no):
    """Type a burst of writing commands without waiting: a setting, chats (long replies), memory, the setting
    again. The console runs a line once the one before it is answered: the first setting is saved at once
    (a loaded machine may take the kill window to reach the last), the second may be cut by the kill."""
    setting = "config_set llm_config.max_tokens {}".format(1000 + round_no)
    dev.send(setting)
    for i in range(6):
        dev.send(_line("chat round {} turn {} ".format(round_no, i) + "w" * 1200))
    dev.send(setting)
    dev.send("chat remember something, round {}".format(round_no))


def _script(fake, round_no):
    replies = []
    for i in range(6):
        replies.append(text("answer {} {} ".format(round_no, i) + "a" * 3000, chunk=400))
    replies.append(tool_use("remember", {"text": "fact of round {}".format(round_no)}))
    replies.append(text("noted"))
    fake.script(*replies)


def _check_files(files_by_name):
    for name, data in files_by_name.items():
        if name.endswith(".jsonl"):
            lines = data.split(b"\n")
            for n, line in enumerate(lines):
                if not line:
                    continue
                try:
                    json.loads(line)
                except ValueError:
                    # only a torn LAST line is allowed, and sessions.py skips it when reading
                    assert n == len(lines) - 1, "{} line {} is torn: {!r}".format(name, n, line[:80])
        if name.endswith("MEMORY.md"):
            assert data.startswith(b"# Memory"), data[:80]
        if name.endswith("SOUL.md"):
            assert data.startswith(b"# Mimi"), data[:80]


def _posix_files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _kill_rounds(runtime, flash, fake, image, seed):
    rng = random.Random(seed)
    args = ["--flash-image", str(image)] if image else []
    for round_no in range(ROUNDS):
        fake.reset()
        _script(fake, round_no)
        dev = Device(runtime, flash, "--anthropic-api", fake.url, *args)
        try:
            dev.ready()
            if round_no == 0:
                assert "saved" in dev.command("set_api_key " + API_KEY)
            _burst(dev, round_no)
            if round_no < 2:  # killed after an answer is on flash (the next one streams), however slow the machine
                dev.expect(r"mimi: answer {} 1 ".format(round_no), 60)
            time.sleep(rng.uniform(*KILL_WINDOW_S))
        finally:
            dev.stop()  # SIGKILL: no close, no flush, no goodbye
        found = lfs_flash.image_files(str(image)) if image else _posix_files(flash / "data")
        _check_files(found)
    # After the last kill: the device boots, answers, and its settings and memory survived.
    fake.reset()
    fake.script(text("still here"))
    dev = Device(runtime, flash, "--anthropic-api", fake.url, *args)
    try:
        dev.ready()
        assert "formatted" not in dev.output  # the image mounted as it was
        assert "still here" in dev.command("chat are you there?", timeout=40)
        shown = dev.command("config_show")
        assert re.search(r"max_tokens\D+10\d\d", shown), shown  # a saved setting, never lost
    finally:
        dev.stop()
    found = lfs_flash.image_files(str(image)) if image else _posix_files(flash / "data")
    _check_files(found)
    assert found["data/memory/MEMORY.md" if image else "memory/MEMORY.md"].startswith(b"# Memory")
    session = found["data/sessions/cli_console.jsonl" if image else "sessions/cli_console.jsonl"]
    assert b'"content":"still here"' in session  # the writes went on between the kills and after them
    assert session.count(b'"content":"answer ') >= 2
    json.loads((flash / "nvs.json").read_text())


def test_sigkill_while_writing_to_a_littlefs_image_leaves_every_file_readable(runtime, flash, fake, tmp_path):
    _kill_rounds(runtime, flash, fake, tmp_path / "flash.img", seed=7 + len(runtime))


def test_sigkill_while_writing_to_the_posix_flash_leaves_every_file_readable(runtime, flash, fake):
    _kill_rounds(runtime, flash, fake, None, seed=11 + len(runtime))


assert RUNTIMES  # both runtimes, through the `runtime` fixture
