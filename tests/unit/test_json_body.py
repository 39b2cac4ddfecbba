# The request body encoded while it is written: the same bytes on every walk, never whole.
import json

from mimi.llm.claude import JsonBody


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
    assert json.loads(first) == {"model": "claude-x", "max_tokens": 4096, "stream": True, "system": system,
                                 "tools": tools, "messages": messages}


def test_no_piece_is_large():
    system, messages, tools = _request()
    assert max(len(p) for p in JsonBody(system, messages, tools, "claude-x", 4096).pieces()) <= 6 * 1024 + 2


def test_a_session_line_in_pieces_is_the_line_json_gives():
    from mimi.storage.session_lines import line_for

    for content in ("", "hi", "caf\u00e9 \"q\" \n\u2603 \U0001F600 " * 300):
        pieces = line_for("assistant", content, 1767225600, 64 * 1024)
        assert "".join(pieces) == '{{"role":{},"content":{},"ts":{}}}'.format(
            json.dumps("assistant"), json.dumps(content), 1767225600)
        assert max(len(p) for p in pieces) <= 6 * 1024 + 16


def test_text_in_pieces_is_sent_as_the_joined_string():
    """A reply's pieces sent back after a tool round (llm/stream.py) are escaped as they are written:
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


def test_a_session_line_from_pieces_is_the_line_of_the_joined_text():
    """A reply saved from its streamed pieces (llm/text.py Text) gives the bytes of the joined str, cut or not."""
    from mimi.llm.text import Text
    from mimi.storage.session_lines import line_for

    pieces = ["caf\u00e9 \"q\" ", "", "\n\u2603 \U0001F600 " * 200, "\\ end", " " * 10]
    for cap in (64 * 1024, 2000, 300, 40):
        whole = "".join(line_for("assistant", "".join(pieces), 1767225600, cap))
        assert "".join(line_for("assistant", pieces, 1767225600, cap)) == whole
        assert "".join(line_for("assistant", Text(pieces).pieces, 1767225600, cap)) == whole


def test_a_reply_sent_back_in_pieces_gives_the_bytes_of_the_joined_blocks():
    """After a tool round the assistant's text goes back as its streamed pieces, never joined."""
    from mimi.llm.stream import MessageAssembler

    assembler = MessageAssembler()
    assembler.handle("content_block_start", json.dumps(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
    for i in range(300):
        assembler.handle("content_block_delta", json.dumps({"type": "content_block_delta", "index": 0, "delta": {
            "type": "text_delta", "text": "caf\u00e9 \"{}\" \n\u2603 \U0001F600 ".format(i)}}))
    assembler.handle("content_block_stop", json.dumps({"type": "content_block_stop", "index": 0}))
    split = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": assembler.blocks()}]
    joined = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": assembler.content}]
    assert isinstance(joined[1]["content"][0]["text"], str)
    body = b"".join(_flat(JsonBody("sys", split, None, "claude-x", 500).pieces()))
    assert body == b"".join(JsonBody("sys", joined, None, "claude-x", 500).pieces())
    assert max(len(p) for p in _flat(JsonBody("sys", split, None, "claude-x", 500).pieces())) < 3 * 1024
