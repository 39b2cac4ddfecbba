# The system prompt's JSON is kept on flash while no file it comes from can have changed, rebuilt after any write.
import os

from support import remove_tree, tempdir, write

from mimi.agent import context as context_module
from mimi.agent.context import Context
from mimi.agent.prompt_file import PromptFile
from mimi.llm.body import value_pieces
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


def _sent(system):
    """The bytes the request writes for this system value (chunks of a file included)."""
    out = []
    for piece in value_pieces(system):
        out.append(b"".join(piece.chunks()) if hasattr(piece, "chunks") else piece)
    return b"".join(out)


def _in_ram(ctx, now):
    """What the request carried before the prompt went to flash: the blocks built in RAM."""
    return b"".join(value_pieces(context_module.blocks(ctx.sections(now))))


def test_kept_across_turns_and_session_writes_rebuilt_after_a_prompt_file_changes():
    root, flash, memory, ctx = _context()
    try:
        first = ctx.system_blocks(NOON)
        assert isinstance(first, PromptFile) and first.is_json
        Sessions(flash.sessions_dir).append("cli", "console", "user", "hello", NOON)  # every turn: quiet
        assert ctx.system_blocks(NOON + 60) is first  # the same file, not rebuilt
        memory.append("the owner likes tea", "2025-11-22")
        second = ctx.system_blocks(NOON + 120)
        assert second is not first and b"likes tea" in _sent(second)
        files.write_atomic(flash.soul_path, "I am a new soul.\n")
        assert b"a new soul" in _sent(ctx.system_blocks(NOON + 180))
        files.makedirs(files.join(flash.root, "skills"))
        files.write_atomic(files.join(flash.root, "skills", "tea.md"), "How to brew tea\n")
        assert b"tea: How to brew tea" in _sent(ctx.system_blocks(NOON + 240))
        kept = ctx.system_blocks(NOON + 300)
        assert ctx.system_blocks(NOON + DAY) is not kept  # a new day: the daily notes shown change
        rebuilt = Context(flash, memory)
        assert _sent(rebuilt.system_blocks(NOON + DAY)) == _sent(ctx.system_blocks(NOON + DAY))  # byte-identical
    finally:
        remove_tree(root)


def test_the_file_holds_the_bytes_the_blocks_in_ram_gave_and_is_sent_in_small_chunks():
    root, flash, memory, ctx = _context()
    try:
        prompt = ctx.system_blocks(NOON)
        assert _sent(prompt) == _in_ram(ctx, NOON)
        sizes = [len(chunk) for chunk in prompt.chunks()]
        assert max(sizes) <= 1024 and sum(sizes) == len(prompt)
        assert not isinstance(ctx._kept[1], (str, list))  # nothing of the prompt's text stays in RAM
    finally:
        remove_tree(root)


def _check_same_bytes(flash, memory, soul, user=None, mem=None, today=None, yesterday=None, skill=None):
    for path, data in ((flash.soul_path, soul), (flash.user_path, user), (flash.memory_path, mem),
                       (flash.daily_path("2025-11-22"), today), (flash.daily_path("2025-11-21"), yesterday)):
        if data is None:
            files.remove(path)
        else:
            write(path, data, "wb")
    if skill is not None:
        files.makedirs(files.join(flash.root, "skills"))
        write(files.join(flash.root, "skills", "s.md"), skill, "wb")
    ctx = Context(flash, memory)
    prompt = ctx.system_blocks(NOON)
    assert isinstance(prompt, PromptFile)
    assert _sent(prompt) == _in_ram(ctx, NOON), (soul, user)


def test_same_bytes_for_unicode_blanks_cuts_at_the_limits_and_broken_utf8():
    root, flash, memory, _ = _context()
    try:
        check = _check_same_bytes
        check(flash, memory, b"plain soul")
        check(flash, memory, b"", b"", b"", b"", b"")  # every section empty: the preamble alone
        check(flash, memory, b"  \n\t ", b"\n\n", b" ", b"\t\n", b"\r\n")  # blanks only: no sections
        check(flash, memory, b"\n\n  soul \"quoted\" \\ \x01 tab\t\n\n", None, b"mem\n", None, b"yesterday \n")
        text = "caf\u00e9 \u2603 \U0001F600 \u2028 \"q\" \\ \x7f ".encode()
        check(flash, memory, text * 310, text * 310)  # over the limits (a 512 KB heap: a few sections at a time)
        check(flash, memory, b"", None, text * 620, text * 155, text * 155, b"# tea\nbrew it\n")
        check(flash, memory, b"a" * 8191 + "\u00e9".encode(), b"b" * 8190 + "\u2603".encode())  # cut at the limit
        check(flash, memory, b"x" * 1023 + "\u2603".encode() + b"y" * 3000)  # a character across two slices
        check(flash, memory, b"x" * 1023 + b"\xe2\x98" + b"y" * 2000, b"bad \xff\xfe \xc0\xaf \xed\xa0\x80 end",
              b"z" * 1022 + b"\xf0\x9f\x98" + b" cut")  # broken UTF-8 shown as U+FFFD, in and across slices
        check(flash, memory, b"a" * 8190 + b"\xe2\x98")  # broken at the very end of a file under the limit
        blanks = b" \n" * 1500
        check(flash, memory, blanks + b"soul" + blanks + b"more" + blanks, blanks, b"m" + blanks)
        check(flash, memory, b"\xc2\xa0 nbsp \xe2\x80\x83", "\u3000wide\u3000".encode())  # runtime's own strip()
    finally:
        remove_tree(root)


def test_a_torn_or_missing_file_is_written_again():
    root, flash, memory, ctx = _context()
    try:
        first = ctx.system_blocks(NOON)
        whole = _sent(first)
        with open(ctx.prompt_path, "r+b") as f:
            data = f.read()
        write(ctx.prompt_path, data[: len(data) // 2], "wb")  # a power cut, or a hand edit
        again = ctx.system_blocks(NOON + 60)
        assert again is not first and _sent(again) == whole
        files.remove(ctx.prompt_path)
        assert _sent(ctx.system_blocks(NOON + 120)) == whole
    finally:
        remove_tree(root)


def test_a_prompt_that_cannot_be_written_is_built_in_ram_with_the_same_bytes():
    root, flash, memory, ctx = _context()
    try:
        expected = _in_ram(ctx, NOON)
        files.makedirs(ctx.prompt_path + ".tmp")  # a folder where the file goes: OSError, as on a full flash
        system = ctx.system_blocks(NOON)
        assert isinstance(system, list) and _sent(system) == expected
        assert system[-1]["cache_control"] == {"type": "ephemeral"}
        assert _sent(ctx.system_blocks(NOON + 60)) == expected  # not tried again until a file changes
        os.rmdir(ctx.prompt_path + ".tmp")
        memory.append("room again", "2025-11-22")
        assert isinstance(ctx.system_blocks(NOON + 120), PromptFile)
    finally:
        remove_tree(root)


def test_a_turn_that_is_not_the_owners_gets_soul_and_skills_only_kept_in_a_file_of_its_own():
    root, flash, memory, ctx = _context()
    try:
        write(flash.soul_path, "I am a cheerful test soul.")
        write(flash.user_path, "Owner: Ada, Lisbon.")
        memory.write("Ada's door code is 4711.\n")
        memory.append_daily("Ada saw the dentist.", "2025-11-22")
        files.makedirs(files.join(flash.root, "skills"))
        files.write_atomic(files.join(flash.root, "skills", "tea.md"), "How to brew tea\n")
        owners = ctx.system_blocks(NOON)
        guests = ctx.system_blocks(NOON, True)
        sent = _sent(guests)
        assert b"cheerful test soul" in sent and b"tea: How to brew tea" in sent
        for private in (b"Owner: Ada", b"4711", b"dentist", b"# Daily notes"):  # the owner's profile, memory, notes
            assert private in _sent(owners) and private not in sent, private
        assert b"You are not talking with your owner" in sent
        assert sent == b"".join(value_pieces(context_module.blocks(ctx.sections(NOON, True))))  # as built in RAM
        assert guests.path != owners.path and ctx.system_blocks(NOON, True) is guests  # each kept, apart
        assert ctx.system_blocks(NOON) is owners
        memory.append("Ada likes green tea", "2025-11-22")  # a memory file changed: both made again
        assert ctx.system_blocks(NOON, True) is not guests and b"green tea" not in _sent(ctx.system_blocks(NOON, True))
        assert b"green tea" in _sent(ctx.system_blocks(NOON))
    finally:
        remove_tree(root)
