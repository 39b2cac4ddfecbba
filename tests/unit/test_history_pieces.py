# storage/history_pieces.py: the history written from the session file, byte for byte the dicts' request JSON
# for lines this runtime wrote; a line another writer escaped otherwise is sent as stored, with the same meaning.
import hashlib
import json

from support import raises, remove_tree, tempdir

from mimi import jsontext
from mimi.llm.claude import JsonBody
from mimi.storage import files
from mimi.storage.history_pieces import HistoryPieces
from mimi.storage.sessions import Sessions

_SYSTEM = [{"type": "text", "text": "soul"}]
_TURN = {"role": "user", "content": "now \u00e9 \U0001f600"}
_TEXTS = (
    "plain",
    "caf\u00e9 \u4e2d\u6587 \U0001f600\U0001f355 emoji",
    'quotes " and \\ backslashes \\" and / slashes',
    "new\nlines\r\n\ttabs \x01\x1f controls \x7f",
    "   ",  # blank: left out, as agent/loop.py did
    "",
    "long \u00e9\U0001f600 " * 400,  # over one escape slice, non-ASCII across the slice edges
    '"' * 1500 + "\\" * 1500,
)


def _expanded(body):
    """The request bytes, pieces with chunks() written out; each such piece's len() checked."""
    out = []
    for piece in body.pieces():
        if hasattr(piece, "chunks"):
            data = b"".join(piece.chunks())
            assert len(piece) == len(data)
            out.append(data)
        else:
            out.append(piece)
    return b"".join(out)


def _old_body(store, limit, chat="42"):
    history = store.history("telegram", chat, limit)
    messages = [m for m in history if m["content"].strip()]
    messages.append(_TURN)
    return _expanded(JsonBody(_SYSTEM, messages, None, "claude-x", 1024))


def _new_body(store, limit, chat="42"):
    history = store.history_pieces("telegram", chat, limit)
    messages = [] if history is None else [history]
    messages.append(_TURN)
    return _expanded(JsonBody(_SYSTEM, messages, None, "claude-x", 1024))


def _same_for_every_limit(store, chat="42", most=30, exact=True):
    """The request as the dicts give it: the same bytes, or (exact=False, lines escaped by another
    writer) the same JSON once decoded (jsontext joins escaped surrogate pairs on both runtimes)."""
    for limit in range(0, most):
        old = _old_body(store, limit, chat)
        new = _new_body(store, limit, chat)
        if exact:
            assert new == old, limit
        else:
            assert jsontext.loads(new) == jsontext.loads(old), limit
        json.loads(new)  # valid JSON


def _write_lines(path, lines):
    with open(path, "wb") as f:
        for line in lines:
            f.write(line if isinstance(line, bytes) else line.encode())
            f.write(b"\n")


def _stored(store, chat="42", limit=20):
    """Per message sent, oldest first: True when its text is sent as stored in the file."""
    return [bool(record[2]) for record in store.history_pieces("telegram", chat, limit).records]


def _sent_as_stored(store, chat="42"):
    """The texts of the messages sent as stored in the file (the others are parsed and escaped again)."""
    texts = [m["content"] for m in store.history("telegram", chat) if m["content"].strip()]
    return [text for text, stored in zip(texts, _stored(store, chat)) if stored]


def test_the_request_bytes_equal_the_dicts_form_for_every_limit():
    d = tempdir("hp_same")
    try:
        store = Sessions(d)
        for i, text in enumerate(_TEXTS * 2):
            store.append("telegram", "42", "user" if i % 3 else "assistant", text, 1700000000 + i)
        _same_for_every_limit(store)
        assert _new_body(store, 12) != _new_body(store, 4)  # the limit is honoured
        assert all(_stored(store))  # this runtime's lines: the text is sent as stored
    finally:
        remove_tree(d)


def test_cut_lines_torn_lines_and_bad_lines_as_history_reads_them():
    d = tempdir("hp_torn")
    try:
        store = Sessions(d, max_bytes=4096)  # lines over 2 KB are cut with " [cut]"
        store.append("telegram", "42", "user", "big \u00e9 " * 2000, 1)
        store.append("telegram", "42", "assistant", "answer", 2)
        path = store.path("telegram", "42")
        with open(path, "ab") as f:
            f.write(b'not json\n{"role":"system","content":"x"}\n\n{"role":"user","content":"torn')
        assert "[cut]" in store.history("telegram", "42")[0]["content"]
        _same_for_every_limit(store, most=6)
        store.append("telegram", "42", "user", "after the power cut", 3)
        _same_for_every_limit(store, most=6)
    finally:
        remove_tree(d)


def test_lines_escaped_by_another_writer_are_sent_as_stored_or_parsed_again():
    d = tempdir("hp_foreign")
    try:
        store = Sessions(d)
        files.makedirs(d)
        lines = [
            '{"role": "user", "content": "spaced \\u00e9", "ts": 1}',  # another key layout: parsed
            '{"content":"key order","role":"assistant"}',
            # CPython's escaping (\uXXXX, pairs) read by either runtime: sent as stored
            '{"role":"user","content":"ascii escapes caf\\u00e9 \\ud83d\\ude00 \\/ \\u0041","ts":2}',
            '{"role":"assistant","content":"raw caf\u00e9 \U0001f600","ts":3}',  # MicroPython's: as stored
            '{"role":"user","content":"lone \\ud83d surrogate","ts":4}',  # the API refuses it: parsed
            '{"role":"assistant","content":"dup","content":"last wins","ts":5}',
            b'{"role":"user","content":"bad \xff\xfe bytes","ts":6}',
            b'{"role":"assistant","content":"raw \xed\xa0\xbd surrogate","ts":6}',
            '{"role":"user","content":"raw \x01 control","ts":6}',
            '{"role":"assistant","content":"\\u0020\\n","ts":7}',  # blank once parsed: left out
            '{"role":"user","content":"bad \\x escape","ts":7}',  # not JSON: skipped
            '{"role":"assistant","content":"lone low \\udc00","ts":7}',
            '{"role":"user","content":"ts 07","ts":07}',  # not JSON: skipped
            '{"role":"user","content":"ts float","ts":7.5}',
            '{"role":"assistant","content":"end","ts":8}',
        ]
        _write_lines(store.path("telegram", "42"), lines)
        _same_for_every_limit(store, most=17, exact=False)
        assert _sent_as_stored(store) == [
            "ascii escapes caf\u00e9 \U0001f600 / A", "raw caf\u00e9 \U0001f600", "end"
        ]
    finally:
        remove_tree(d)


def test_escapes_and_characters_across_read_slices_and_blank_lines():
    d = tempdir("hp_edges")
    try:
        store = Sessions(d)
        files.makedirs(d)
        lines = []
        for pad in range(30):  # every escape kind and UTF-8 length across the 1 KB slice edge
            _write_lines(store.path("telegram", str(pad)), [
                '{"role":"user","content":"' + "p" * (994 + pad)
                + '\\ud83d\\ude00\\n\\"\\\\\\u00e9\u00e9\U0001f600' * 3 + '","ts":1}',
                '{"role":"assistant","content":"' + "q" * (1000 + pad) + '\\ud83d x","ts":2}',
            ])
            _same_for_every_limit(store, str(pad), most=3, exact=False)
            assert _stored(store, str(pad)) == [True, False]
        lines = [
            '{"role":"user","content":"  \\n\\t\\r\\f \\u000b\\u0020","ts":3}',  # blank
            '{"role":"assistant","content":"\\u3000\u3000\\u00a0 \\u001c","ts":4}',  # blank on CPython
            '{"role":"user","content":"\\b","ts":5}',  # not blank
            '{"role":"assistant","content":"","ts":6}',
            '{"role":"user","content":"last","ts":7}',
        ]
        _write_lines(store.path("telegram", "42"), lines)
        _same_for_every_limit(store, most=7, exact=False)
        assert all(_stored(store))
    finally:
        remove_tree(d)


def test_no_history_gives_none_and_the_request_has_only_the_turn():
    d = tempdir("hp_none")
    try:
        store = Sessions(d)
        assert store.history_pieces("telegram", "42") is None  # no file
        store.append("telegram", "42", "assistant", "an assistant line cannot open the history", 1)
        store.append("telegram", "42", "user", "  ", 2)
        assert store.history_pieces("telegram", "42") is None  # only a blank user message
        _same_for_every_limit(store, most=4)
        assert store.history_pieces("telegram", "42", 0) is None
    finally:
        remove_tree(d)


def test_pieces_are_small_and_the_file_is_read_again_on_each_walk():
    d = tempdir("hp_small")
    try:
        store = Sessions(d, max_bytes=1024 * 1024)
        for i in range(20):
            store.append("telegram", "42", "user" if i % 2 == 0 else "assistant", "w\u00e9rd \U0001f600" * 120, i)
        history = store.history_pieces("telegram", "42")
        assert len(history.records) == 20
        assert all(record[2] for record in history.records)  # lines this runtime wrote are sent as stored
        walks = []
        for _ in range(2):  # each walk hashed as it goes: 24 KB joined would need a hole the unit heap may lack
            digest, size = hashlib.sha256(), 0
            for chunk in history.chunks():
                assert len(chunk) <= 1024 + 32, len(chunk)  # small pieces
                digest.update(chunk)
                size += len(chunk)
            walks.append((digest.digest(), size))
        assert walks[0] == walks[1] and len(history) == walks[0][1] > 20 * 240  # the file read again, the same
    finally:
        remove_tree(d)


def test_a_session_rewritten_before_a_send_is_read_again_or_refused():
    d = tempdir("hp_changed")
    try:
        store = Sessions(d)
        for i in range(6):
            store.append("telegram", "42", "user" if i % 2 == 0 else "assistant", "m{}".format(i), i)
        history = store.history_pieces("telegram", "42")
        store.append("telegram", "42", "user", "m6", 6)  # appended meanwhile (a retry after the save)
        assert len(history) == len(b"".join(history.chunks()))  # len() reads the file again
        assert [m["content"] for m in json.loads(b"[" + b"".join(history.chunks()) + b"]")][-1] == "m6"
        store.append("telegram", "42", "assistant", "m7", 7)  # changed between the count and the send
        assert raises(RuntimeError, lambda: b"".join(history.chunks()))
        store.clear("telegram_42")  # session_clear during the turn: nothing left to send
        assert raises(RuntimeError, len, history)
    finally:
        remove_tree(d)


def test_a_line_changed_in_place_is_noticed():
    d = tempdir("hp_inplace")
    try:
        store = Sessions(d)
        store.append("telegram", "42", "user", "hello", 1)
        store.append("telegram", "42", "assistant", "there", 2)
        history = store.history_pieces("telegram", "42")
        path = store.path("telegram", "42")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data.replace(b'"role":"user"', b'"role":"usex"'))
        assert raises(RuntimeError, lambda: b"".join(history.chunks()))
        assert HistoryPieces(path, 20).records == []
    finally:
        remove_tree(d)
