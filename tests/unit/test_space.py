# Full flash policy: what is removed and in which order, what is never removed, what the owner hears.
import os
import sys

from support import raises, read, remove_tree, tempdir, write

from mimi.storage import files, space, space_free
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory
from mimi.storage.sessions import Sessions

TODAY = "2026-03-10"


def _full():
    return OSError(28, "No space left on device")


class FlashFull:
    """A write that finds the flash full until `gone` has been removed (a fake full condition)."""

    def __init__(self, gone):
        self.gone = gone
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if any(files.exists(p) for p in self.gone):
            raise _full()
        return "written"


def _device():
    root = tempdir("space")
    flash = Flash(root + "/data")
    flash.seed()
    audit = root + "/data/audit"
    files.makedirs(audit)
    told = []
    policy = space.Space(flash, audit, told.append, lambda: TODAY)
    policy.cleanup = space_free.Cleanup(flash, audit, told.append, lambda: TODAY)  # made here to set its figures (else at the first full flash)
    policy.cleanup.free_bytes = lambda: None  # unknown, as on a file system without statvfs
    policy.cleanup.target = 1  # one file frees enough (the real LittleFS test uses the real target)
    return root, flash, policy, told


def _session(flash, name, ts):
    files.makedirs(flash.sessions_dir)
    write(flash.sessions_dir + "/" + name + ".jsonl",
          '{{"role":"user","content":"hi","ts":{}}}\n{{"role":"assistant","content":"yo","ts":{}}}\n'.format(ts, ts + 1))


def _kept_intact(flash):
    assert "Long-term notes" in read(flash.memory_path)
    assert read(flash.soul_path).startswith("# Mimi")
    assert files.exists(flash.user_path)


def test_full_flash_removes_the_least_recent_conversation_and_tells_the_owner():
    root, flash, policy, told = _device()
    try:
        _session(flash, "telegram_1", 5000)  # newest last message
        _session(flash, "telegram_2", 1000)  # oldest: goes first
        _session(flash, "cli_console", 200)  # older still, but it is the one being written
        writing = flash.sessions_dir + "/cli_console.jsonl"
        write_it = FlashFull([flash.sessions_dir + "/telegram_2.jsonl"])
        assert policy.guarded(write_it, "the conversation cli_console", (writing,)) == "written"
        assert write_it.calls == 2  # tried, freed, retried once
        assert files.listdir(flash.sessions_dir) == ["cli_console.jsonl", "telegram_1.jsonl"]
        assert told == ["flash full: removed 1 old conversation to make room (MEMORY.md, SOUL.md, "
                        "USER.md and the settings are never removed)"]
        _kept_intact(flash)
    finally:
        remove_tree(root)


def test_policy_order_is_conversations_then_daily_notes_then_audit_days_never_today():
    root, flash, policy, told = _device()
    try:
        _session(flash, "telegram_9", 100)
        write(flash.sessions_dir + "/telegram_9.jsonl.tmp", "half")  # left by a power cut
        for day in ("2026-03-01", "2026-02-27", TODAY):
            write(flash.daily_path(day), "note of " + day + "\n")
        for day in ("2026-03-02", TODAY):
            write(root + "/data/audit/" + day + ".jsonl", "{}\n")
        order = [(kind, path.rsplit("/", 1)[1]) for kind, path in policy.cleanup.candidates()]
        assert order == [("tmp", "telegram_9.jsonl.tmp"), ("session", "telegram_9.jsonl"),
                         ("daily", "2026-02-27.md"), ("daily", "2026-03-01.md"), ("audit", "2026-03-02.jsonl")]
        # Everything that may go is needed: all of it goes, today's files and the owner's files stay.
        write_it = FlashFull([root + "/data/audit/2026-03-02.jsonl"])
        policy.cleanup.target = 1 << 30  # more than there is: every candidate goes
        policy.guarded(write_it, "the note of " + TODAY, (flash.daily_path(TODAY),))
        assert files.listdir(flash.daily_dir) == [TODAY + ".md"]
        assert files.listdir(root + "/data/audit") == [TODAY + ".jsonl"]
        assert files.listdir(flash.sessions_dir) == []
        assert told == ["flash full: removed 1 old conversation and 2 old daily notes and 1 old audit log day "
                        "and 1 leftover temporary file to make room (MEMORY.md, SOUL.md, USER.md and the "
                        "settings are never removed)"]
        _kept_intact(flash)
    finally:
        remove_tree(root)


def test_nothing_left_to_remove_raises_and_the_owner_hears_once_what_was_not_saved():
    root, flash, policy, told = _device()
    try:
        def always_full():
            raise _full()

        for _ in range(3):
            exc = raises(OSError, policy.guarded, always_full, "the conversation telegram_42")
            assert files.is_full(exc)
        assert len(told) == 1
        assert told[0].startswith("flash full: could not save the conversation telegram_42; nothing more can be "
                                  "removed (MEMORY.md, SOUL.md, USER.md and the settings are never removed)")
        _kept_intact(flash)
    finally:
        remove_tree(root)


def test_a_new_episode_after_the_flash_recovered_is_told_again_but_not_within_one():
    root, flash, policy, told = _device()
    try:
        for i in range(4):
            _session(flash, "telegram_{}".format(i), 100 + i)
        policy.cleanup.target = 1 << 30
        # A clean-up that cannot reach its target: the episode goes on, later clean-ups are quiet.
        policy.guarded(FlashFull([flash.sessions_dir + "/telegram_0.jsonl"]), "a")
        assert told == ["flash full: removed 4 old conversations to make room (MEMORY.md, SOUL.md, USER.md "
                        "and the settings are never removed)"]
        _session(flash, "telegram_5", 500)
        policy.guarded(FlashFull([flash.sessions_dir + "/telegram_5.jsonl"]), "b")
        assert len(told) == 1
        # This clean-up leaves room again: the episode ends (quietly, the owner knows of it) ...
        policy.cleanup.target = 1
        _session(flash, "telegram_6", 600)
        policy.guarded(FlashFull([flash.sessions_dir + "/telegram_6.jsonl"]), "c")
        assert len(told) == 1
        # ... so the next full flash is news.
        _session(flash, "telegram_7", 700)
        policy.guarded(FlashFull([flash.sessions_dir + "/telegram_7.jsonl"]), "d")
        assert len(told) == 2 and told[1].startswith("flash full: removed 1 old conversation ")
    finally:
        remove_tree(root)


def test_other_errors_are_not_a_full_flash_and_are_not_retried():
    root, flash, policy, told = _device()
    try:
        _session(flash, "telegram_1", 100)
        calls = []

        def broken():
            calls.append(1)
            raise OSError(5, "EIO")

        raises(OSError, policy.guarded, broken, "x")
        assert calls == [1] and told == [] and files.exists(flash.sessions_dir + "/telegram_1.jsonl")
        assert files.is_full(OSError(28)) and not files.is_full(ValueError(28)) and not files.is_full(OSError(2))
    finally:
        remove_tree(root)


def test_the_clean_up_is_loaded_only_at_the_first_full_flash_and_then_frees_room():
    saved = sys.modules.pop("mimi.storage.space_free", None)
    root = tempdir("space")
    told = []
    try:
        flash = Flash(root + "/data")
        flash.seed()
        space.current = space.Space(flash, None, told.append, lambda: TODAY)
        Memory(flash).append("likes green tea", TODAY)  # normal writes: through the guard, no clean-up code
        Sessions(flash.sessions_dir).append("telegram", "1", "user", "hi", 1000)
        assert "mimi.storage.space_free" not in sys.modules and space.current.cleanup is None
        write_it = FlashFull([flash.sessions_dir + "/telegram_1.jsonl"])
        assert space.guarded(write_it, "the conversation cli_console") == "written"
        assert "mimi.storage.space_free" in sys.modules and write_it.calls == 2
        assert files.listdir(flash.sessions_dir) == []
        assert told == ["flash full: removed 1 old conversation to make room (MEMORY.md, SOUL.md, "
                        "USER.md and the settings are never removed)"]
        _kept_intact(flash)
    finally:
        space.current = None
        if saved is not None:
            sys.modules["mimi.storage.space_free"] = saved
        remove_tree(root)


def test_write_atomic_that_runs_out_of_room_keeps_the_old_file_and_leaves_no_tmp():
    root = tempdir("space")
    try:
        path = root + "/MEMORY.md"
        files.write_atomic(path, "old notes\n")

        def chunks():
            yield "new notes, part one\n"
            raise _full()

        exc = raises(OSError, files.write_atomic, path, chunks())
        assert files.is_full(exc)
        assert read(path) == "old notes\n"
        assert files.listdir(root) == ["MEMORY.md"]
    finally:
        remove_tree(root)


class RamBlocks:
    """A RAM block device of 4096-byte blocks (MicroPython's extended block protocol)."""

    def __init__(self, count):
        self.data = bytearray(4096 * count)
        erased = b"\xff" * 4096  # a block at a time: one copy of the whole device, not two
        for n in range(count):
            self.data[n * 4096:(n + 1) * 4096] = erased
        self.count = count

    def readblocks(self, n, buf, off=0):
        start = n * 4096 + off
        buf[:] = self.data[start:start + len(buf)]

    def writeblocks(self, n, buf, off=0):
        start = n * 4096 + off
        self.data[start:start + len(buf)] = buf

    def ioctl(self, op, arg):
        if op == 4:
            return self.count
        if op == 5:
            return 4096
        if op in (3, 6):
            return 0
        return None


def test_real_littlefs_full_flash_trims_sessions_keeps_memory_and_saves_the_new_message():
    try:
        import vfs

        lfs2 = vfs.VfsLfs2
    except (ImportError, AttributeError):
        return  # CPython: the same policy runs on a real LittleFS image in tests/e2e/test_flash_faults.py
    bdev = RamBlocks(24)
    lfs2.mkfs(bdev)
    mount = "/space_test_lfs"
    vfs.mount(lfs2(bdev), mount)
    told = []
    try:
        flash = Flash(mount + "/data")
        flash.seed()
        memory = Memory(flash)
        memory.append("likes green tea", TODAY)
        chats = Sessions(flash.sessions_dir)
        n = 0
        try:
            while True:  # old conversations until the flash is full (no policy yet)
                chats.append("telegram", str(n), "user", "x" * 3000, 1000 + n)
                n += 1
        except OSError as exc:
            assert files.is_full(exc)
        assert n >= 3
        space.current = space.Space(flash, None, told.append, lambda: TODAY)
        before = files.listdir(flash.sessions_dir)
        new = "remember this: " + "y" * 3000  # needs a block of its own: the flash has none
        chats.append("cli", "console", "user", new, 99999)
        assert chats.history("cli", "console")[-1]["content"] == new
        after = files.listdir(flash.sessions_dir)
        assert "cli_console.jsonl" in after and len(after) < len(before) + 1
        assert "telegram_0.jsonl" not in after  # the least recent went first ...
        assert "telegram_{}.jsonl".format(n - 1) in after  # ... and only as many as make room
        assert told and told[-1].startswith("flash full: removed ")
        assert "likes green tea" in memory.read()
        assert not [name for name in os.listdir(flash.sessions_dir) if name.endswith(".tmp")]
    finally:
        space.current = None
        vfs.umount(mount)
