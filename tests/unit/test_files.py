# storage/files.py: atomic writes, bounded UTF-8 reads, appends, folders, line streaming.
from support import raises, read, remove_tree, tempdir, write

from mimi.storage import files


class Boom(Exception):
    pass


def test_join_uses_single_slashes():
    assert files.join("/data", "config", "SOUL.md") == "/data/config/SOUL.md"
    assert files.join("/data/", "/sessions") == "/data/sessions"
    assert files.join("/", "data") == "/data"
    assert files.join("flash/data", "", "x") == "flash/data/x"


def test_exists_size_is_dir_and_missing_paths():
    d = tempdir("files")
    try:
        p = files.join(d, "a.txt")
        assert not files.exists(p) and files.size(p) == -1 and not files.is_dir(p)
        write(p, "hello")
        assert files.exists(p) and files.size(p) == 5 and not files.is_dir(p)
        assert files.is_dir(d)
        assert files.listdir(files.join(d, "nope")) == []
        assert files.read_text(files.join(d, "nope"), 100) is None
        files.remove(files.join(d, "nope"))  # missing: no error
        files.remove(p)
        assert not files.exists(p)
    finally:
        remove_tree(d)


def test_makedirs_creates_parents_and_is_idempotent():
    d = tempdir("files")
    try:
        deep = files.join(d, "a", "b", "c")
        files.makedirs(deep)
        files.makedirs(deep)
        assert files.is_dir(deep)
        assert files.listdir(files.join(d, "a")) == ["b"]
        write(files.join(d, "file"), "x")
        raises(OSError, files.makedirs, files.join(d, "file", "sub"))
    finally:
        remove_tree(d)


def test_write_atomic_str_bytes_and_chunks():
    d = tempdir("files")
    try:
        p = files.join(d, "f.md")
        files.write_atomic(p, "héllo")
        assert read(p) == "héllo"
        files.write_atomic(p, b"bytes")
        assert read(p) == "bytes"
        files.write_atomic(p, (c for c in ["one ", b"two ", "thr\u00e9e"]))
        assert read(p) == "one two thr\u00e9e"
        assert files.listdir(d) == ["f.md"]  # no .tmp left behind
    finally:
        remove_tree(d)


def test_write_atomic_keeps_old_content_when_the_writer_fails_midway():
    d = tempdir("files")
    try:
        p = files.join(d, "SOUL.md")
        write(p, "old soul")

        def chunks():
            yield "new "
            yield "half"
            raise Boom("power cut")

        raises(Boom, files.write_atomic, p, chunks())
        assert read(p) == "old soul"
        assert files.listdir(d) == ["SOUL.md"]
        raises(TypeError, files.write_atomic, p, [b"ok", 42])  # a bad chunk is an error too
        assert read(p) == "old soul"
        assert files.listdir(d) == ["SOUL.md"]
    finally:
        remove_tree(d)


def test_write_atomic_failure_on_a_new_file_leaves_nothing():
    d = tempdir("files")
    try:
        p = files.join(d, "new.md")

        def chunks():
            yield "partial"
            raise Boom("no space")

        raises(Boom, files.write_atomic, p, chunks())
        assert files.listdir(d) == []
        raises(OSError, files.write_atomic, files.join(d, "missing", "x.md"), "data")
        files.makedirs(files.join(d, "folder"))
        raises(OSError, files.write_atomic, files.join(d, "folder"), "data")  # rename refused
        assert files.is_dir(files.join(d, "folder"))
        assert files.listdir(d) == ["folder"]  # its .tmp was removed
    finally:
        remove_tree(d)


def test_write_atomic_overwrites_a_stale_tmp_from_a_power_cut():
    d = tempdir("files")
    try:
        p = files.join(d, "MEMORY.md")
        write(p, "old")
        write(p + ".tmp", "garbage from an interrupted write that was longer")
        assert read(p) == "old"  # readers never look at the .tmp
        files.write_atomic(p, "new")
        assert read(p) == "new"
        assert files.listdir(d) == ["MEMORY.md"]
        write(p + ".tmp", "stale")
        files.remove_stale_tmp(p)
        files.remove_stale_tmp(p)  # nothing left: no error
        assert files.listdir(d) == ["MEMORY.md"]
    finally:
        remove_tree(d)


def test_read_text_never_reads_past_max_bytes_and_cuts_at_a_character_boundary():
    d = tempdir("files")
    try:
        p = files.join(d, "u.md")
        text = "ab\u00e9\u20ac\U0001f600z"  # 1+1+2+3+4+1 bytes
        write(p, text)
        expected = {
            0: "", 1: "a", 2: "ab", 3: "ab", 4: "ab\u00e9", 5: "ab\u00e9", 6: "ab\u00e9",
            7: "ab\u00e9\u20ac", 8: "ab\u00e9\u20ac", 10: "ab\u00e9\u20ac",
            11: "ab\u00e9\u20ac\U0001f600",
            12: text, 100: text,
        }
        for n in expected:
            got = files.read_text(p, n)
            assert got == expected[n], (n, got)
            assert len(got.encode()) <= n
    finally:
        remove_tree(d)


def test_read_text_replaces_invalid_bytes_instead_of_failing():
    d = tempdir("files")
    try:
        p = files.join(d, "bad.md")
        write(p, b"ok \xff\xfe then \xc3\xa9 end", "wb")
        assert files.read_text(p, 100) == "ok \ufffd\ufffd then \u00e9 end"
    finally:
        remove_tree(d)


def test_utf8_boundary():
    assert files.utf8_boundary(b"") == 0
    assert files.utf8_boundary(b"abc") == 3
    assert files.utf8_boundary("\u00e9".encode()[:1]) == 0
    assert files.utf8_boundary("a\u20ac".encode()[:3]) == 1
    assert files.utf8_boundary("a\U0001f600".encode()) == 5
    assert files.utf8_boundary("a\U0001f600".encode()[:4]) == 1


def test_append_line_and_ends_with_newline():
    d = tempdir("files")
    try:
        p = files.join(d, "log.jsonl")
        assert files.ends_with_newline(p)  # missing counts as clean
        files.append_line(p, "one")
        files.append_line(p, "tw\u00f6")
        assert read(p) == "one\ntw\u00f6\n"
        assert files.ends_with_newline(p)
        write(p, "torn", "a")
        assert not files.ends_with_newline(p)
    finally:
        remove_tree(d)


def test_iter_lines_streams_and_skips_overlong_lines():
    d = tempdir("files")
    try:
        p = files.join(d, "lines.txt")
        long_line = "x" * 3000
        write(p, "first\n" + long_line + "\nmiddle\n\nlast-no-newline")
        got = list(files.iter_lines(p, 1000))
        assert got == [b"first", None, b"middle", b"", b"last-no-newline"]
        assert list(files.iter_lines(p, 5000)) == [
            b"first", long_line.encode(), b"middle", b"", b"last-no-newline"
        ]
        assert list(files.iter_lines(p, 1000, start=len("first\n") + 3001)) == [
            b"middle", b"", b"last-no-newline"
        ]
        write(p, "a\n" + long_line)  # overlong last line without newline
        assert list(files.iter_lines(p, 1000)) == [b"a", None]
        assert list(files.iter_lines(files.join(d, "missing"), 10)) == []
    finally:
        remove_tree(d)
