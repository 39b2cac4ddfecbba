# gateway/history.py: the web chat's history frame, bounded in turns and text, read from the file's end.
import json

from support import remove_tree, tempdir

from mimi.gateway import history, protocol
from mimi.storage.sessions import Sessions


def _store(n, size=10):
    folder = tempdir("hist")
    store = Sessions(folder, max_bytes=256 * 1024)  # no trimming: the caps here are the history's
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        store.append("websocket", "web_1", role, "m{} ".format(i) + "x" * size, 1700000000 + i)
    return store, folder


def test_the_newest_turns_oldest_first_and_a_flag_for_older_ones():
    store, folder = _store(50)
    small, small_folder = _store(3)
    try:
        messages, more = history.recent(store, "websocket", "web_1")
        assert len(messages) == history.TURNS_MAX and more
        assert messages[-1]["content"].startswith("m49 ") and messages[-1]["role"] == "assistant"
        assert messages[0]["content"].startswith("m10 ")
        messages, more = history.recent(small, "websocket", "web_1")
        assert [m["role"] for m in messages] == ["user", "assistant", "user"] and not more
    finally:
        remove_tree(folder)
        remove_tree(small_folder)


def test_text_is_capped_per_message_and_per_frame():
    store, folder = _store(12, size=5000)
    try:
        messages, more = history.recent(store, "websocket", "web_1")
        assert more and sum(len(m["content"]) for m in messages) <= history.TEXT_MAX
        assert len(messages) == history.TEXT_MAX // 5004
        big = Sessions(tempdir("hist_big"))
        big.append("websocket", "w", "assistant", "y" * (history.MESSAGE_MAX + 500), 1700000000)
        (one,), more = history.recent(big, "websocket", "w")
        assert one["content"].endswith(history.CUT_MARK) and not more
        assert len(one["content"]) == history.MESSAGE_MAX + len(history.CUT_MARK)
        remove_tree(big.dir)
    finally:
        remove_tree(folder)


def test_an_unknown_chat_has_an_empty_history_and_the_frame_is_json():
    store, folder = _store(2)
    try:
        frame = json.loads(history.frame(store, "websocket", "web_nobody"))
        assert frame == {"type": "history", "chat_id": "web_nobody", "messages": [], "more": False}
        frame = json.loads(history.frame(store, "websocket", "web_1"))
        assert [m["role"] for m in frame["messages"]] == ["user", "assistant"]
    finally:
        remove_tree(folder)


def test_clients_ask_for_history_by_chat_id():
    assert protocol.parse_frame('{"type":"history","chat_id":"web_a1"}') == ("history", "web_a1", None)
    assert protocol.parse_frame('{"type":"history"}') == ("history", None, None)
    try:
        protocol.parse_frame('{"type":"history","chat_id":"../x"}')
        assert False, "a bad chat id must be refused"
    except protocol.BadFrame as exc:
        assert "chat_id" in str(exc)
    assert json.loads(protocol.user("web_a1", "hi")) == {"type": "user", "content": "hi", "chat_id": "web_a1"}
