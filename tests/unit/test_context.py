# The system prompt: built from flash, byte-identical while the files are unchanged, time kept out.
import json

from support import remove_tree, tempdir, write

from mimi.agent.context import Context
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory

NOON = 1763812800  # 2025-11-22 12:00 UTC


def _system_text(ctx, now):
    """The system prompt as one string (requests send the blocks)."""
    return "".join(ctx.sections(now))


def _context():
    root = tempdir("ctx")
    flash = Flash(root)
    flash.seed()
    return root, flash, Context(flash, Memory(flash))


def test_system_prompt_is_byte_identical_across_turns_and_hours():
    root, flash, ctx = _context()
    try:
        first = _system_text(ctx, NOON)
        assert _system_text(ctx, NOON + 3000) == first  # later the same day: no clock inside
        sent = json.loads(b"".join(ctx.system_blocks(NOON).chunks()))  # the request's system value, from flash
        assert sent[-1]["cache_control"] == {"type": "ephemeral"}
        assert "".join(b["text"] for b in sent) == first
        assert "12:00" not in first and "12:50" not in first
    finally:
        remove_tree(root)


def test_prompt_holds_soul_user_memory_and_recent_daily_notes():
    root, flash, ctx = _context()
    try:
        write(flash.soul_path, "I am a cheerful test soul.")
        write(flash.user_path, "Owner: Ada, Lisbon.")
        Memory(flash).write("Ada likes green tea.\n")
        Memory(flash).append_daily("Watered the plants.", "2025-11-22")
        Memory(flash).append_daily("Old note from last week.", "2025-11-15")
        text = _system_text(ctx, NOON)
        for expected in ("cheerful test soul", "Owner: Ada", "green tea", "Watered the plants", "2025-11-22"):
            assert expected in text
        assert "Old note from last week" not in text  # only the last days' notes
    finally:
        remove_tree(root)


def test_a_changed_file_changes_the_prompt():
    root, flash, ctx = _context()
    try:
        before = _system_text(ctx, NOON)
        Memory(flash).write("A new fact.\n")
        assert _system_text(ctx, NOON) != before
    finally:
        remove_tree(root)


def test_user_turn_carries_time_and_channel():
    _, _, ctx = _context()
    turn = ctx.user_turn("hello", "telegram", NOON)
    assert turn["role"] == "user"
    assert turn["content"][0]["text"] == "[context] 2025-11-22 12:00 UTC via telegram"
    assert turn["content"][1] == {"type": "text", "text": "hello"}
