# storage/sessions.py and session_lines.py: safe file names, tail-read history, torn lines, trimming, clear, list.
import json

from support import raises, read, remove_tree, tempdir, write

from mimi.storage import files, sessions
from mimi.storage.session_lines import LINE_MAX, parse_message
from mimi.storage.sessions import CHAT_ID_MAX, Sessions, encode_id


def _conversation(store, n, chat="42"):
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        store.append("telegram", chat, role, "m{}".format(i), 1700000000 + i)


def _write_lines(path, count):
    # a big session written directly (fast), same format as Sessions.append
    with open(path, "w") as f:
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            f.write('{{"role":"{}","content":"m{}","ts":{}}}\n'.format(role, i, i))


def test_file_names_are_safe_for_any_chat_id():
    s = Sessions("/nowhere")
    assert s.file_name("telegram", 42) == "telegram_42.jsonl"
    assert s.file_name("telegram", "-100123") == "telegram_-100123.jsonl"
    assert s.file_name("ws", "a_b-C9") == "ws_a_b-C9.jsonl"
    assert s.file_name("ws", "../../etc") == "ws_%2E%2E%2F%2E%2E%2Fetc.jsonl"
    assert s.file_name("ws", "a/b") == "ws_a%2Fb.jsonl"
    assert s.file_name("ws", "x\x00y") == "ws_x%00y.jsonl"
    assert s.file_name("ws", "caf\u00e9") == "ws_caf%C3%A9.jsonl"
    assert s.file_name("ws", "a b%") == "ws_a%20b%25.jsonl"
    for cid in ("../../etc", "a/b", "x\x00y", "\u00e9\U0001f600", ".", ".."):
        name = s.file_name("ws", cid)
        assert "/" not in name and "\x00" not in name and ".." not in name
        assert name.count(".") == 1 and name.endswith(".jsonl")
    assert encode_id("a/b") != encode_id("a%2Fb")  # '%' itself is encoded: no collisions


def test_file_names_reject_bad_input_with_clear_messages():
    s = Sessions("/nowhere")
    assert "empty" in str(raises(ValueError, s.file_name, "telegram", ""))
    assert s.file_name("ws", "x" * CHAT_ID_MAX) == "ws_" + "x" * CHAT_ID_MAX + ".jsonl"
    assert "longer" in str(raises(ValueError, s.file_name, "ws", "x" * (CHAT_ID_MAX + 1)))
    for channel in ("", "Telegram", "tele_gram", "a/b", "..", "web socket"):
        assert "channel" in str(raises(ValueError, s.file_name, channel, "1"))


def test_append_writes_jsonl_and_history_returns_oldest_first():
    d = tempdir("sess")
    try:
        s = Sessions(d)
        assert not s.exists("telegram", 42)
        assert s.history("telegram", 42) == []
        s.append("telegram", 42, "user", "hi \"there\"\nline2 \u00e9", 1700000000)
        s.append("telegram", 42, "assistant", "hello", 1700000001)
        assert s.exists("telegram", 42)
        lines = read(files.join(d, "telegram_42.jsonl")).split("\n")
        assert lines[-1] == "" and len(lines) == 3
        first = json.loads(lines[0])
        assert first == {"role": "user", "content": "hi \"there\"\nline2 \u00e9", "ts": 1700000000}
        assert s.history("telegram", 42) == [
            {"role": "user", "content": "hi \"there\"\nline2 \u00e9"},
            {"role": "assistant", "content": "hello"},
        ]
        assert s.history("telegram", "42", limit=1) == []  # only an assistant message: dropped
        raises(ValueError, s.append, "telegram", 42, "system", "x", 1)
        raises(ValueError, s.append, "telegram", 42, "user", None, 1)
    finally:
        remove_tree(d)


def test_history_of_100_and_5000_lines_gives_the_same_last_20():
    d = tempdir("sess")
    try:
        s = Sessions(d, max_bytes=10 * 1024 * 1024)
        _write_lines(files.join(d, "telegram_small.jsonl"), 100)
        _write_lines(files.join(d, "telegram_big.jsonl"), 5000)
        small = s.history("telegram", "small")
        big = s.history("telegram", "big")
        assert [m["content"] for m in small] == ["m{}".format(i) for i in range(80, 100)]
        assert [m["content"] for m in big] == ["m{}".format(i) for i in range(4980, 5000)]
        # a session larger than MicroPython's whole test heap (512 KB) is read from its tail only
        _write_lines(files.join(d, "telegram_huge.jsonl"), 30000)
        assert files.size(files.join(d, "telegram_huge.jsonl")) > 1024 * 1024
        huge = s.history("telegram", "huge")
        assert [m["content"] for m in huge] == ["m{}".format(i) for i in range(29980, 30000)]
        assert small[0]["role"] == "user"
        assert s.history("telegram", "big", limit=3) == [
            {"role": "user", "content": "m4998"},
            {"role": "assistant", "content": "m4999"},
        ]
    finally:
        remove_tree(d)


def test_history_skips_torn_and_garbage_lines():
    d = tempdir("sess")
    try:
        s = Sessions(d)
        _conversation(s, 6)
        p = files.join(d, "telegram_42.jsonl")
        good = read(p).split("\n")
        garbage = [
            "not json at all",
            '{"role":"system","content":"x","ts":1}',
            '{"role":"user","content":5,"ts":1}',
            '{"role":"user"}',
            "[1,2,3]",
            '"just a string"',
            "",
            '{"role":"user","content":"tru',
        ]
        write(p, "\n".join(good[:3] + garbage + good[3:6]) + "\n")
        write(p, b'\xff\xfe\n{"role":"assistant","conte', "ab")  # torn tail, no newline
        got = [m["content"] for m in s.history("telegram", 42)]
        assert got == ["m0", "m1", "m2", "m3", "m4", "m5"]
        # the next append starts on a fresh line instead of gluing onto the torn one
        s.append("telegram", 42, "user", "after the cut", 1)
        assert [m["content"] for m in s.history("telegram", 42)][-2:] == ["m5", "after the cut"]
    finally:
        remove_tree(d)


def test_history_skips_a_line_longer_than_line_max():
    d = tempdir("sess")
    try:
        s = Sessions(d, max_bytes=10 * 1024 * 1024)
        p = files.join(d, "telegram_7.jsonl")
        def huge(mode):  # a line of three times LINE_MAX, written in pieces (no 48 KB string in a small heap)
            write(p, '{"role":"assistant","content":"', mode)
            for _ in range(LINE_MAX * 3 // 1024):
                write(p, "y" * 1024, "a")
            write(p, '","ts":1}\n', "a")

        write(p, '{"role":"user","content":"q1","ts":1}\n')
        huge("a")
        write(p, '{"role":"user","content":"q2","ts":2}\n', "a")
        assert s.history("telegram", 7) == [
            {"role": "user", "content": "q1"}, {"role": "user", "content": "q2"}
        ]
        huge("w")  # huge first line
        write(p, '{"role":"user","content":"q3","ts":3}\n', "a")
        assert s.history("telegram", 7) == [{"role": "user", "content": "q3"}]
    finally:
        remove_tree(d)


def test_append_creates_a_missing_sessions_folder():
    d = tempdir("sess")
    try:
        s = Sessions(files.join(d, "data", "sessions"))
        s.append("ws", "c", "user", "hi", 1)
        assert s.history("ws", "c") == [{"role": "user", "content": "hi"}]
    finally:
        remove_tree(d)


def test_append_cuts_content_so_a_line_always_fits():
    d = tempdir("sess")
    try:
        s = Sessions(d, max_bytes=4096)
        s.append("ws", "c", "user", "\u00e9" * 5000, 1)
        hist = s.history("ws", "c")
        assert len(hist) == 1 and hist[0]["content"].endswith("[cut]")
        assert files.size(files.join(d, "ws_c.jsonl")) <= 4096 // 2
        small = Sessions(d, max_bytes=290)  # escapes make "\x01" 6 bytes: the cut must converge
        small.append("ws", "e", "user", "\x01" * 24, 1)
        got = small.history("ws", "e")[0]["content"]
        assert got.endswith(" [cut]") and got[:-6] == "\x01" * len(got[:-6])
    finally:
        remove_tree(d)


def test_trimming_keeps_the_newest_lines_and_valid_jsonl():
    d = tempdir("sess")
    try:
        s = Sessions(d, max_bytes=2000)
        p = files.join(d, "telegram_42.jsonl")
        _conversation(s, 30)
        write(p, "garbage line\n", "a")  # survives until the next trim, then is dropped
        _conversation(s, 200)
        size = files.size(p)
        assert 0 < size <= 2000
        text = read(p)
        assert text.endswith("\n")
        lines = text.split("\n")[:-1]
        numbers = []
        for line in lines:
            obj = json.loads(line)  # every line is valid JSON
            assert obj["role"] in ("user", "assistant")
            numbers.append(int(obj["content"][1:]))
        assert numbers[-1] == 199
        assert numbers == list(range(numbers[0], 200))  # newest kept, in order, no gaps
        assert files.listdir(d) == ["telegram_42.jsonl"]  # no .tmp left
        assert s.history("telegram", 42, limit=4)[-1] == {"role": "assistant", "content": "m199"}
    finally:
        remove_tree(d)


def _old_trim(store, path, total):
    # the trim as it was before it read lines by offset (each line read and parsed whole)
    start = sessions._keep_from(path, total, store.max_bytes)

    def valid_lines():
        for line in files.iter_lines(path, LINE_MAX, start):
            if parse_message(line) is not None:
                yield line + b"\n"

    files.write_atomic(path, valid_lines())


def _mixed_session(path):
    # own-form lines of both runtimes (raw and escaped non-ASCII), 4 KB replies, torn and foreign lines
    big = "x" * 3000 + "caf\u00e9 \U0001f355 \u4e2d\u6587 \"q\" \\ \n" + "y" * 1000
    lines = []
    for i in range(12):
        role = "user" if i % 3 != 1 else "assistant"
        text = big if i % 2 else "m{} \u00e9\U0001f600".format(i)
        lines.append('{{"role":"{}","content":{},"ts":{}}}'.format(role, json.dumps(text), 1700000000 + i))
        lines.append('{"role":"' + role + '","content":"' + text.replace("\n", "\\n").replace('"', "'")
                     + '","ts":' + str(i) + "}")
    extra = [
        '{"role":"user","content":"\\u00e9\\ud83c\\udf55 \\/ \\t","ts":5}',
        '{"content":"key order","role":"user"}',
        '{"role":"system","content":"not a chat role","ts":1}',
        '{"role":"user","content":"lone \\ud800 half","ts":1}',
        '{"role":"user","content":"ts 0","ts":01}',
        '{"role":"user","content":"' + "w" * (LINE_MAX + 100) + '","ts":1}',
        '{"role":"assistant","content":"raw\ttab","ts":1}',
        '{"role":"user","content":"bad \\x escape","ts":1}',
        '{"role":"user","content":"torn ' + "z" * 2000,
        "[1, 2]",
        "garbage",
        "",
    ]
    with open(path, "wb") as f:  # written a line at a time: the MicroPython unit heap is small
        for i, line in enumerate(lines):
            f.write(line.encode() + b"\n")
            if i % 2:
                f.write(extra[(i // 2) % len(extra)].encode() + b"\n")
            if i == 9:
                f.write(b'{"role":"user","content":"\xff\xfe not utf-8","ts":1}\n')
        f.write(b'{"role":"assistant","content":"torn at the end')
    return files.size(path)


def test_trimming_by_offsets_writes_what_parsing_whole_lines_wrote():
    d = tempdir("sess")
    try:
        old, new = files.join(d, "old.jsonl"), files.join(d, "new.jsonl")
        total = _mixed_session(old)
        source = read(old, "rb")
        for max_bytes in range(2000, 2 * total + 2000, 1777):
            store = Sessions(d, max_bytes=max_bytes)
            write(old, source, "wb")
            write(new, source, "wb")
            _old_trim(store, old, total)
            sessions.trim(new, total, store.max_bytes)
            assert read(new, "rb") == read(old, "rb"), max_bytes
        assert sorted(files.listdir(d)) == ["new.jsonl", "old.jsonl"]  # no .tmp left
    finally:
        remove_tree(d)


def test_clear_by_stem_or_by_chat_id():
    d = tempdir("sess")
    try:
        s = Sessions(d)
        s.append("telegram", 42, "user", "a", 1)
        s.append("ws", 42, "user", "b", 1)
        s.append("telegram", 7, "user", "c", 1)
        s.append("ws", "a/b", "user", "d", 1)
        write(files.join(d, "notes.txt"), "not a session")
        assert s.clear("telegram_42") == 1
        assert not s.exists("telegram", 42) and s.exists("ws", 42)
        assert s.clear("42") == 1
        assert s.clear("a/b") == 1
        assert s.clear("nothing") == 0
        assert s.clear("") == 0
        assert s.clear("../notes.txt") == 0
        assert files.listdir(d) == ["notes.txt", "telegram_7.jsonl"]
        assert s.clear(7) == 1
    finally:
        remove_tree(d)


def test_list_reports_stem_size_and_lines():
    d = tempdir("sess")
    try:
        s = Sessions(d)
        assert s.list() == []
        s.append("ws", "b", "user", "x", 1)
        s.append("ws", "b", "assistant", "y", 2)
        s.append("telegram", 1, "user", "z", 3)
        write(files.join(d, "ws_b.jsonl.tmp"), "stale")
        listed = s.list()
        assert [row[0] for row in listed] == ["telegram_1", "ws_b"]
        assert listed[1] == ("ws_b", files.size(files.join(d, "ws_b.jsonl")), 2)
        assert listed[0][2] == 1
        assert Sessions(files.join(d, "missing")).list() == []
    finally:
        remove_tree(d)


def test_lines_read_backwards_come_with_their_offsets():
    from mimi.storage.session_lines import lines_backward, spans_backward

    d = tempdir("sess_offsets")
    try:
        path = files.join(d, "x.jsonl")
        lines = [b"first", b"", b"x" * (LINE_MAX + 5), b"\xc3\xa9" * 700, b"y" * 1023, b"torn"]
        data = b"\n".join(lines)
        write(path, data, "wb")
        with open(path, "rb") as f:
            got = list(lines_backward(f, len(data)))
        assert [line for _, line in got] == [line for line in reversed(lines) if len(line) <= LINE_MAX]
        for start, line in got:
            assert data[start : start + len(line)] == line and (start == 0 or data[start - 1] == 0x0A)
        with open(path, "rb") as f:
            spans = list(spans_backward(f, len(data)))  # offsets only: long lines too, none read whole
        assert [data[start : start + size] for start, size in spans] == list(reversed(lines))
    finally:
        remove_tree(d)


def test_append_of_a_reply_in_pieces_writes_the_bytes_of_the_joined_text():
    from mimi.llm.text import Text

    d = tempdir("sess_pieces")
    try:
        pieces = ["Hello ", "caf\u00e9 \"q\"\n", "x" * 3000, "", " \u2603 \U0001F600"]
        long = ["y" * 700] * 30  # over the line cap: cut the same way
        for i, content in enumerate((pieces, long)):
            a, b = Sessions(d + "/a"), Sessions(d + "/b")
            a.append("cli", "c{}".format(i), "assistant", Text(content), 1700000000)
            b.append("cli", "c{}".format(i), "assistant", "".join(content), 1700000000)
            assert read(a.path("cli", "c{}".format(i))) == read(b.path("cli", "c{}".format(i)))
            assert a.history("cli", "c{}".format(i)) == []  # history starts with the user
            assert [m["content"] for m in a.newest("cli", "c{}".format(i))][0].startswith(content[0][:5])
    finally:
        remove_tree(d)
