# The OpenAI-compatible wire: streamed chunks as each server sends them into a reply (text, tool calls by index,
# whole calls, reasoning never shown, usage or an estimate, errors), and the request written from the agent's
# Messages API forms (system string, tool_calls and tool messages, a photo's data URL, functions).
import json

from support import raises, remove_tree, tempdir, write

from mimi.llm.file_pieces import Base64File, TextPieces
from mimi.llm.openai_request import ChatBody, messages_of, tools_of
from mimi.llm.openai_stream import ChatAssembler
from mimi.llm.sse import SSEParser
from mimi.llm.stream import StreamError
from mimi.tools.lazy_tool import Encoded


def _chunk(delta=None, finish=None, **extra):
    event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m-1",
             "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    event.update(extra)
    return "data: " + json.dumps(event) + "\n\n"


def _usage(prompt, completion, cached=0):
    event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m-1", "choices": [],
             "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                       "prompt_tokens_details": {"cached_tokens": cached}}}
    return "data: " + json.dumps(event) + "\n\n"


def play(stream, sent=400):
    """Feed the stream's lines to SSEParser and a ChatAssembler as the client does; (assembler, shown text)."""
    parser, assembler, shown = SSEParser(), ChatAssembler(), []
    for line in stream.split("\n"):
        event = parser.feed(line)
        if event is not None:
            delta = assembler.handle(event[0], event[1])
            if delta:
                shown.append(delta)
        if assembler.done:
            break
    assembler.finished(sent)
    return assembler, "".join(shown)


def test_openai_text_with_a_usage_chunk():
    stream = (_chunk({"role": "assistant", "content": "", "refusal": None}) + _chunk({"content": "Hel"})
              + _chunk({"content": "lo."}) + _chunk({}, "stop") + _usage(120, 7, cached=100) + "data: [DONE]\n\n")
    reply, shown = play(stream)
    assert shown == "Hello." and reply.text == "Hello." and reply.stop_reason == "end_turn"
    assert reply.usage == {"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": 100,
                           "cache_creation_input_tokens": 0}
    assert not reply.estimated and reply.model == "m-1" and reply.tool_calls == []


def test_fragmented_tool_calls_join_by_index_and_two_calls_in_one_reply():
    stream = (_chunk({"content": "Looking."})
              + _chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                        "function": {"name": "get_time", "arguments": ""}}]})
              + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"tz": '}}]})
              + _chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                        "function": {"name": "gpio_read", "arguments": '{"pin"'}}]})
              + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"UTC"}'}}]})
              + _chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': 4}'}}]})
              + _chunk({}, "tool_calls") + "data: [DONE]\n\n")
    reply, shown = play(stream)
    assert shown == "Looking." and reply.stop_reason == "tool_use"
    assert reply.tool_calls == [{"type": "tool_use", "id": "call_a", "name": "get_time", "input": {"tz": "UTC"}},
                                {"type": "tool_use", "id": "call_b", "name": "gpio_read", "input": {"pin": 4}}]
    blocks = reply.blocks()
    assert blocks[0] == {"type": "text", "text": "Looking."} and blocks[1:] == reply.tool_calls  # short: one str


def test_ollamas_whole_calls_and_one_server_numbering_each_call_zero():
    whole = (_chunk({"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "index": 0, "type": "function",
                                                                       "function": {"name": "a", "arguments": "{}"}}]})
             + _chunk({"role": "assistant", "content": "", "tool_calls": [{"id": "call_2", "index": 0,
                                                                         "type": "function", "function": {
                                                                             "name": "b", "arguments": '{"x": 1}'}}]})
             + _chunk({"role": "assistant", "content": ""}, "tool_calls"))  # no usage, no [DONE]: the stream ends
    reply, _ = play(whole, sent=800)
    assert [(c["id"], c["name"], c["input"]) for c in reply.tool_calls] == [("call_1", "a", {}), ("call_2", "b", {"x": 1})]
    assert reply.estimated and reply.usage["input_tokens"] == 200 and reply.usage["output_tokens"] >= 1


def test_reasoning_is_never_the_reply_and_comments_are_skipped():
    stream = (": OPENROUTER PROCESSING\n\n" + _chunk({"role": "assistant", "content": "", "reasoning": "hmm, "})
              + _chunk({"content": None, "reasoning_content": "let me think"}) + ": OPENROUTER PROCESSING\n\n"
              + _chunk({"content": "Answer."}) + _chunk({}, "stop") + "data: [DONE]\n\n")
    reply, shown = play(stream)
    assert shown == "Answer." and reply.text == "Answer."


def test_length_is_max_tokens_and_a_stop_with_calls_is_a_tool_round():
    reply, _ = play(_chunk({"content": "cut"}, "length") + "data: [DONE]\n\n")
    assert reply.stop_reason == "max_tokens"
    reply, _ = play(_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{}"}}]})
                    + _chunk({}, "stop") + "data: [DONE]\n\n")
    assert reply.stop_reason == "tool_use"  # llama.cpp ends some tool rounds with "stop"


def test_an_error_inside_the_stream_and_bad_arguments_are_stream_errors():
    stream = _chunk({"content": "Part"}) + _chunk({"content": ""}, "error", error={"code": 502, "message": "down"})
    error = raises(StreamError, play, stream)
    assert error.kind == "api_error" and error.message == "down"
    bad = _chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": "{not json"}}]})
    assert raises(StreamError, play, bad + _chunk({}, "tool_calls")).kind == "invalid_tool_input"


def test_the_reply_and_tool_input_bounds_hold():
    parser, assembler = SSEParser(), ChatAssembler(text_max=10, tool_input_max=8)
    event = parser.feed(_chunk({"content": "x" * 11}).split("\n")[0])
    assert event is None
    event = parser.feed("")
    assert raises(StreamError, assembler.handle, event[0], event[1]).kind == "reply_too_long"
    assembler = ChatAssembler(tool_input_max=8)
    line = _chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "t", "arguments": '{"a": "123456"}'}}]})
    event = SSEParser()
    event.feed(line.split("\n")[0])
    name, data = event.feed("")
    assert raises(StreamError, assembler.handle, name, data).kind == "tool_input_too_long"


class _Tool(Encoded):
    """A tool kept encoded, as the registry's built-ins are (tools/lazy_tool.py Encoded): its bytes' span."""

    def __init__(self, data):
        self.data = data

    def _span(self):
        return self.data, 0, len(self.data)


def _body(messages, system="You are Mimi.", tools=None, choice=None):
    body = ChatBody("m-1", messages_of(system, messages), tools_of(tools), 50, "max_tokens", choice)
    pieces, length = [], 0
    for piece in body.pieces():
        length += len(piece)  # the Content-Length, counted as net/http counts it
        pieces.append(b"".join(bytes(c) for c in piece.chunks()) if hasattr(piece, "chunks") else bytes(piece))
    raw = b"".join(pieces)
    assert len(raw) == length
    return json.loads(raw)


def test_a_tool_round_becomes_tool_calls_and_tool_messages_in_order():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": TextPieces(["Let me ", "look."])},
                                          {"type": "tool_use", "id": "call_a", "name": "t", "input": {"q": "\u00e9"}},
                                          {"type": "tool_use", "id": "call_b", "name": "t", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a", "content": "one",
                                      "is_error": False},
                                     {"type": "tool_result", "tool_use_id": "call_b", "content": "bad pin",
                                      "is_error": True}]},
    ]
    tool = _Tool(b'{"name": "t", "description": "a \\"quoted\\" tool", "input_schema": {"type": "object"}}')
    owners = {"name": "dice", "description": "roll", "input_schema": {"type": "object", "properties": {}}}
    body = _body(messages, tools=[tool, owners, {"type": "web_search_20250305", "name": "web_search"}], choice="none")
    assert body["messages"][0] == {"role": "system", "content": "You are Mimi."}
    assistant = body["messages"][2]
    assert assistant["content"] == "Let me look."
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [{"q": "\u00e9"}, {}]
    assert body["messages"][3:] == [{"role": "tool", "tool_call_id": "call_a", "content": "one"},
                                    {"role": "tool", "tool_call_id": "call_b", "content": "[tool error] bad pin"}]
    assert body["tools"] == [{"type": "function", "function": {"name": "t", "description": 'a "quoted" tool',
                                                               "parameters": {"type": "object"}}},
                             {"type": "function", "function": {"name": "dice", "description": "roll",
                                                               "parameters": {"type": "object", "properties": {}}}}]
    assert body["tool_choice"] == "none" and body["max_tokens"] == 50
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_photo_is_a_data_url_read_from_flash_and_the_system_blocks_one_string():
    top = tempdir("oa")
    try:
        path = top + "/p.jpg"
        data = b"\xff\xd8\xff" + bytes(range(200)) * 10
        write(path, data, "wb")
        turn = {"role": "user", "content": [
            {"type": "text", "text": "[context]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": Base64File(path)}},
            {"type": "text", "text": "What is it?"}]}
        body = _body([turn], system=[{"type": "text", "text": "One. "},
                                     {"type": "text", "text": "Two.", "cache_control": {"type": "ephemeral"}}])
        assert body["messages"][0]["content"] == "One. Two."
        parts = body["messages"][1]["content"]
        assert [p["type"] for p in parts] == ["text", "image_url", "text"]
        import binascii

        url = parts[1]["image_url"]["url"]
        assert url.startswith("data:image/jpeg;base64,") and binascii.a2b_base64(url.split(",", 1)[1]) == data
    finally:
        remove_tree(top)


def test_every_built_in_tool_becomes_a_function_of_the_length_counted():
    from mimi.tools.builtin_defs import DEFS
    from mimi.tools.lazy_tool import LazyTool

    start, tools = DEFS.find(b"\n") + 1, []
    while DEFS[start:start + 1] not in (b"", b"\n"):
        at = start
        for _ in range(5):  # name, module, tier, acting, level
            at = DEFS.find(b"\t", at) + 1
        tools.append(LazyTool(None, at))
        start = DEFS.find(b"\n", at) + 1
    functions = tools_of(tools)
    made = b"".join(bytes(chunk) for chunk in functions.chunks())
    assert len(made) == len(functions)
    listed = json.loads(made)
    assert [f["function"]["name"] for f in listed] == [tool.name for tool in tools] and len(listed) > 20
    for function in listed:
        assert function["type"] == "function" and function["function"]["parameters"]["type"] == "object"
        assert "input_schema" not in function["function"]
