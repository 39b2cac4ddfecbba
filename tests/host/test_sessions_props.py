# Property tests (CPython, hypothesis): session file names, tail-read history, trims, read_text.
import json
import os
import shutil
import sys
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in ("firmware", "host_sim/standins"):
    _full = os.path.join(_ROOT, _p)
    if _full not in sys.path:
        sys.path.insert(0, _full)

from mimi.storage import files  # noqa: E402
from mimi.storage.session_lines import LINE_MAX, line_for  # noqa: E402
from mimi.storage.sessions import CHAT_ID_MAX, Sessions  # noqa: E402

_SAFE = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-%")
_SETTINGS = settings(max_examples=int(os.environ.get("MIMI_PROP_EXAMPLES", "60")), deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

chat_ids = st.one_of(
    st.integers(min_value=-(10**15), max_value=10**15),
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=CHAT_ID_MAX),
)
contents = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
messages = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), contents), max_size=40)


def _unquote(encoded):
    out = bytearray()
    i = 0
    while i < len(encoded):
        if encoded[i] == "%":
            out.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(encoded[i]))
            i += 1
    return out.decode()


@given(chat_ids)
@_SETTINGS
def test_file_name_is_safe_and_reversible(chat_id):
    name = Sessions("/x").file_name("telegram", chat_id)
    assert name.startswith("telegram_") and name.endswith(".jsonl")
    encoded = name[len("telegram_") : -len(".jsonl")]
    assert set(encoded) <= _SAFE
    assert _unquote(encoded) == str(chat_id)  # injective: two chats never share a file


def _reference_history(raw_lines, limit):
    """What history() must return, computed the slow obvious way from the whole file."""
    valid = []
    for raw in raw_lines:
        if len(raw) > LINE_MAX:
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        if (isinstance(obj, dict) and obj.get("role") in ("user", "assistant")
                and isinstance(obj.get("content"), str)):
            valid.append({"role": obj["role"], "content": obj["content"]})
    tail = valid[-limit:] if limit > 0 else []
    while tail and tail[0]["role"] != "user":
        tail.pop(0)
    return tail


def _message_line(role, content):
    return json.dumps({"role": role, "content": content, "ts": 1}).encode()


raw_lines = st.lists(
    st.one_of(
        st.builds(_message_line, st.sampled_from(["user", "assistant", "system"]), contents),
        st.binary(max_size=40),
        st.integers(min_value=900, max_value=2200).map(lambda n: b"x" * n),  # around block size
        st.integers(min_value=LINE_MAX - 40, max_value=LINE_MAX + 40).map(
            lambda n: _message_line("user", "L" * n)[: n]  # around LINE_MAX, valid or cut
        ),
        st.builds(lambda c: _message_line("user", "y" * c), st.integers(LINE_MAX - 60, LINE_MAX)),
    ),
    max_size=30,
)


@given(raw_lines, st.booleans(), st.integers(min_value=0, max_value=25))
@_SETTINGS
def test_history_matches_a_whole_file_reference(lines, trailing_newline, limit):
    lines = [ln.replace(b"\n", b" ") for ln in lines]
    data = b"\n".join(lines) + (b"\n" if trailing_newline and lines else b"")
    folder = tempfile.mkdtemp(prefix="mimi-props-")
    try:
        with open(os.path.join(folder, "ws_c.jsonl"), "wb") as f:
            f.write(data)
        got = Sessions(folder, max_bytes=10**9).history("ws", "c", limit=limit)
        assert got == _reference_history(data.split(b"\n"), limit)
    finally:
        shutil.rmtree(folder)


@given(messages, st.integers(min_value=300, max_value=3000))
@_SETTINGS
def test_appended_history_is_always_the_newest_tail(sent, max_bytes):
    folder = tempfile.mkdtemp(prefix="mimi-props-")
    try:
        store = Sessions(folder, max_bytes=max_bytes)
        for role, content in sent:
            store.append("ws", "c", role, content, 1)
        path = os.path.join(folder, "ws_c.jsonl")
        if sent:
            assert 0 <= files.size(path) <= max_bytes
            with open(path, "rb") as f:
                for line in f.read().split(b"\n")[:-1]:
                    json.loads(line)  # the file stays valid JSONL through every trim
        got = store.history("ws", "c", limit=1000)
        lines = ["".join(line_for(r, c, 1, store.line_cap)) for r, c in sent]
        written = [json.loads(line) for line in lines]
        for obj, (_, content) in zip(written, sent):  # a long message is cut, never mangled
            kept = obj["content"]
            assert kept == content or (kept.endswith(" [cut]") and content.startswith(kept[:-6])) \
                or kept == ""
        expected = [{"role": w["role"], "content": w["content"]} for w in written]
        while expected and expected[0]["role"] != "user":
            expected.pop(0)
        assert got == (expected[len(expected) - len(got) :] if got else [])  # the newest tail
        if sent:
            with open(path, "rb") as f:
                newest = json.loads(f.read().split(b"\n")[-2])
            assert newest == written[-1]  # the newest message always survives a trim
        if sum(len(line.encode()) + 1 for line in lines) <= max_bytes:
            assert got == expected  # never trimmed: the whole conversation is there
    finally:
        shutil.rmtree(folder)


@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=50), st.integers(0, 220))
@_SETTINGS
def test_read_text_is_the_longest_whole_character_prefix(text, max_bytes):
    folder = tempfile.mkdtemp(prefix="mimi-props-")
    try:
        path = os.path.join(folder, "t.md")
        with open(path, "wb") as f:
            f.write(text.encode())
        got = files.read_text(path, max_bytes)
        assert text.startswith(got)
        assert len(got.encode()) <= max_bytes
        rest = text[len(got) :]
        assert not rest or len(got.encode()) + len(rest[0].encode()) > max_bytes
    finally:
        shutil.rmtree(folder)
