# The request body encoded while it is written: the same bytes on every walk, as the list form, never whole.
import json

from mimi.llm.claude import JsonBody, _json_pieces


def _request():
    system = [{"type": "text", "text": "soul " * 1000, "cache_control": {"type": "ephemeral"}}]
    tools = [{"name": "t{}".format(i), "description": "d" * 300, "input_schema": {"type": "object", "properties": {}}}
             for i in range(20)]
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "m\u00e9ssage " * 100} for i in range(10)]
    return system, messages, tools


def test_each_walk_gives_the_same_bytes_as_the_list_form():
    system, messages, tools = _request()
    body = JsonBody(system, messages, tools, "claude-x", 4096)
    first = b"".join(body.pieces())
    assert first == b"".join(body.pieces())  # walked twice: once to count, once to send
    assert first == b"".join(_json_pieces(system, messages, tools, "claude-x", 4096))
    assert json.loads(first) == {"model": "claude-x", "max_tokens": 4096, "stream": True, "system": system,
                                 "tools": tools, "messages": messages}


def test_no_piece_is_large():
    system, messages, tools = _request()
    assert max(len(p) for p in JsonBody(system, messages, tools, "claude-x", 4096).pieces()) <= 6 * 1024 + 2


def test_a_session_line_in_pieces_is_the_line_json_gives():
    from mimi.storage.sessions import _line_for

    for content in ("", "hi", "caf\u00e9 \"q\" \n\u2603 \U0001F600 " * 300):
        pieces = _line_for("assistant", content, 1767225600, 64 * 1024)
        assert "".join(pieces) == '{{"role":{},"content":{},"ts":{}}}'.format(
            json.dumps("assistant"), json.dumps(content), 1767225600)
        assert max(len(p) for p in pieces) <= 6 * 1024 + 16


def test_text_in_pieces_is_sent_as_the_joined_string():
    """A summary call's transcript (agent/summary_call.py) is kept as pieces and escaped as it is written:
    the request bytes equal those of the joined text, and no piece is the whole."""
    from mimi.llm.file_pieces import TextPieces

    pieces = ["The older part:\n", "\nUser: caf\u00e9 \"q\" \\ \u2603 \U0001F600\n", "\nMimi: " + "x" * 3000 + "\n"]
    split = [{"role": "user", "content": TextPieces(pieces)}]
    joined = [{"role": "user", "content": "".join(pieces)}]
    body = b"".join(_flat(JsonBody("sys", split, None, "claude-x", 500).pieces()))
    assert body == b"".join(JsonBody("sys", joined, None, "claude-x", 500).pieces())
    assert len(TextPieces(pieces)) == len(json.dumps("".join(pieces)).encode()) - 2
    assert json.loads(body)["messages"][0]["content"] == "".join(pieces)


def _flat(pieces):  # as net/http writes them: a piece with chunks() is written chunk by chunk
    for piece in pieces:
        if hasattr(piece, "chunks"):
            yield from piece.chunks()
        else:
            yield piece
