# The system prompt's sections are kept while no file they come from can have changed, rebuilt after any write.
from support import remove_tree, tempdir

from mimi.agent.context import Context
from mimi.storage import files
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory
from mimi.storage.sessions import Sessions

NOON = 1763812800  # 2025-11-22 12:00 UTC
DAY = 86400


def _context():
    root = tempdir("ctxc")
    flash = Flash(root)
    flash.seed()
    memory = Memory(flash)
    return root, flash, memory, Context(flash, memory)


def test_kept_across_turns_and_session_writes_rebuilt_after_a_prompt_file_changes():
    root, flash, memory, ctx = _context()
    try:
        first = ctx.sections(NOON)
        Sessions(flash.sessions_dir).append("cli", "console", "user", "hello", NOON)  # every turn: quiet
        assert ctx.sections(NOON + 60) is first  # the same strings, not rebuilt
        memory.append("the owner likes tea", "2025-11-22")
        second = ctx.sections(NOON + 120)
        assert second is not first and "likes tea" in "".join(second)
        files.write_atomic(flash.soul_path, "I am a new soul.\n")
        assert "a new soul" in "".join(ctx.sections(NOON + 180))
        files.makedirs(files.join(flash.root, "skills"))
        files.write_atomic(files.join(flash.root, "skills", "tea.md"), "How to brew tea\n")
        assert "tea: How to brew tea" in "".join(ctx.sections(NOON + 240))
        kept = ctx.sections(NOON + 300)
        assert ctx.sections(NOON + DAY) is not kept  # a new day: the daily notes shown change
        rebuilt = Context(flash, memory)
        assert "".join(rebuilt.sections(NOON + DAY)) == "".join(ctx.sections(NOON + DAY))  # byte-identical
    finally:
        remove_tree(root)
