# storage/layout.py and storage/memory.py: first-boot seeding, MEMORY.md, daily notes, search.
from support import raises, read, remove_tree, tempdir, write

from mimi.storage import files
from mimi.storage.layout import Flash
from mimi.storage.memory import DAILY_MAX_BYTES, MEMORY_MAX_BYTES, Memory


def _seeded():
    root = files.join(tempdir("mem"), "data")
    flash = Flash(root)
    flash.seed()
    return flash


def _cleanup(flash):
    remove_tree(flash.root.rsplit("/", 1)[0])


def test_layout_paths():
    flash = Flash("/data")
    assert flash.config_dir == "/data/config"
    assert flash.soul_path == "/data/config/SOUL.md"
    assert flash.user_path == "/data/config/USER.md"
    assert flash.memory_path == "/data/memory/MEMORY.md"
    assert flash.daily_dir == "/data/memory/daily"
    assert flash.daily_path("2025-03-09") == "/data/memory/daily/2025-03-09.md"
    assert flash.sessions_dir == "/data/sessions"
    assert flash.certs_dir == "/data/certs"
    for bad in ("../../x", "2025-3-9", "2025/03/09", "2025-03-0a", "", None):
        assert "YYYY-MM-DD" in str(raises(ValueError, flash.daily_path, bad))


def test_seed_creates_folders_and_defaults_once():
    root = files.join(tempdir("mem"), "flash", "data")
    flash = Flash(root)
    try:
        created = flash.seed()
        assert created == [flash.soul_path, flash.user_path, flash.memory_path]
        for folder in (flash.config_dir, flash.daily_dir, flash.sessions_dir, flash.certs_dir):
            assert files.is_dir(folder)
        soul = read(flash.soul_path)
        assert "Mimi" in soul and "ESP32-S3" in soul
        assert "Timezone" in read(flash.user_path)
        assert flash.seed() == []
    finally:
        remove_tree(root.rsplit("/", 2)[0])


def test_seed_never_overwrites_edited_files_and_removes_stale_tmp():
    flash = _seeded()
    try:
        write(flash.soul_path, "You are Bob.")
        write(flash.user_path, "")  # emptied on purpose by the owner
        write(flash.soul_path + ".tmp", "half-written default")
        files.remove(flash.memory_path)
        assert flash.seed() == [flash.memory_path]
        assert read(flash.soul_path) == "You are Bob."
        assert read(flash.user_path) == ""
        assert not files.exists(flash.soul_path + ".tmp")
    finally:
        _cleanup(flash)


def test_memory_read_write_and_cap():
    flash = _seeded()
    try:
        mem = Memory(flash)
        assert "Memory" in mem.read()
        mem.write("# Memory\n- likes tea\n")
        assert mem.read() == "# Memory\n- likes tea\n"
        assert mem.read(max_bytes=8) == "# Memory"
        err = raises(ValueError, mem.write, "x" * (MEMORY_MAX_BYTES + 1))
        assert str(MEMORY_MAX_BYTES) in str(err)
        assert mem.read() == "# Memory\n- likes tea\n"  # unchanged after the refusal
        files.remove(flash.memory_path)
        assert mem.read() == ""
    finally:
        _cleanup(flash)


def test_memory_append_adds_dated_single_lines():
    flash = _seeded()
    try:
        mem = Memory(flash)
        mem.write("# Memory")  # no trailing newline, as a hand edit may leave it
        assert mem.append("Owner's cat is\ncalled  Miso", "2025-03-09") == (
            "- [2025-03-09] Owner's cat is called Miso"
        )
        mem.append("prefers metric units", "2025-03-10")
        assert mem.read() == (
            "# Memory\n- [2025-03-09] Owner's cat is called Miso\n"
            "- [2025-03-10] prefers metric units\n"
        )
        raises(ValueError, mem.append, "   ", "2025-03-10")
        raises(ValueError, mem.append, "x", "../../etc")
    finally:
        _cleanup(flash)


def test_memory_append_refuses_to_grow_past_the_cap():
    flash = _seeded()
    try:
        mem = Memory(flash)
        mem.write("x" * (MEMORY_MAX_BYTES - 30) + "\n")
        before = mem.read()
        err = raises(ValueError, mem.append, "a fact that does not fit", "2025-01-01")
        assert "full" in str(err)
        assert mem.read() == before
        mem.append("fits", "2025-01-01")
        assert files.size(flash.memory_path) <= MEMORY_MAX_BYTES
    finally:
        _cleanup(flash)


def test_daily_notes_append_read_and_recent():
    flash = _seeded()
    try:
        mem = Memory(flash)
        assert mem.read_daily("2025-03-09") == ""
        mem.append_daily("walked 5 km", "2025-03-09")
        mem.append_daily("call mum\nbuy bread\n", "2025-03-09")
        mem.append_daily("dentist at 10", "2025-03-11")
        write(flash.daily_path("2025-03-10"), "  \n")  # blank note
        assert mem.read_daily("2025-03-09") == "walked 5 km\ncall mum\nbuy bread\n"
        assert mem.read_daily("2025-03-09", max_bytes=6) == "walked"
        assert mem.recent_daily(["2025-03-11", "2025-03-10", "2025-03-09", "2025-03-08"]) == [
            ("2025-03-11", "dentist at 10\n"),
            ("2025-03-09", "walked 5 km\ncall mum\nbuy bread\n"),
        ]
        assert mem.daily_dates() == ["2025-03-11", "2025-03-10", "2025-03-09"]
        raises(ValueError, mem.append_daily, "", "2025-03-09")
        raises(ValueError, mem.append_daily, "x", "2025-03-09/../../x")
        raises(ValueError, mem.append_daily, "y" * DAILY_MAX_BYTES, "2025-03-09")
        assert mem.read_daily("2025-03-09") == "walked 5 km\ncall mum\nbuy bread\n"
    finally:
        _cleanup(flash)


def test_search_is_case_insensitive_memory_first_then_newest_notes():
    flash = _seeded()
    try:
        mem = Memory(flash)
        mem.append("Cat is called Miso", "2025-01-01")
        mem.append_daily("fed the CAT", "2025-03-01")
        mem.append_daily("vet for the cat\nnothing else", "2025-03-05")
        write(files.join(flash.daily_dir, "notes.md"), "cat in a file that is not a note\n")
        hits = mem.search("cat")
        assert hits == [
            ("MEMORY.md", "- [2025-01-01] Cat is called Miso"),
            ("daily/2025-03-05.md", "vet for the cat"),
            ("daily/2025-03-01.md", "fed the CAT"),
        ]
        assert mem.search("CAT", max_hits=2) == hits[:2]
        assert mem.search("dog") == []
        assert mem.search("") == []
    finally:
        _cleanup(flash)


def test_search_shortens_long_hits_and_skips_huge_lines():
    flash = _seeded()
    try:
        mem = Memory(flash)
        mem.write("needle " + "a" * 500 + "\n" + "needle" + "b" * 5000 + "\nshort needle\n")
        hits = mem.search("NEEDLE")
        assert len(hits) == 2
        assert hits[0][1].startswith("needle aaa") and len(hits[0][1]) <= 300
        assert hits[1] == ("MEMORY.md", "short needle")
    finally:
        _cleanup(flash)
