# The Claude stream assembler: SSE events of a Messages API reply into blocks, text, tools, usage.
import json

from support import raises

from mimi.llm.sse import SSEParser
from mimi.llm.stream import SERVER_BLOCKS_MAX, TEXT_MAX, MessageAssembler, StreamError

# The text reply exactly as protocols.md shows it.
HELLO_STREAM = """event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"...","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}

event: message_stop
data: {"type":"message_stop"}

"""


def play(stream_text, assembler=None):
    """Run an SSE stream through SSEParser and the assembler; return (assembler, text deltas)."""
    assembler = assembler or MessageAssembler()
    parser = SSEParser()
    deltas = []
    for line in stream_text.split("\n"):
        event = parser.feed(line)
        if event is not None:
            piece = assembler.handle(*event)
            if piece is not None:
                deltas.append(piece)
    return assembler, deltas


def send(assembler, data):
    """Hand the assembler one event, named by its data's type."""
    return assembler.handle(data["type"], json.dumps(data))


def start(assembler, message_id="msg_1", usage=None):
    message = {"id": message_id, "type": "message", "role": "assistant", "content": [],
               "model": "claude-test", "stop_reason": None, "stop_sequence": None,
               "usage": usage or {"input_tokens": 1, "output_tokens": 1}}
    send(assembler, {"type": "message_start", "message": message})


def text_block(assembler, index, pieces):
    send(assembler, {"type": "content_block_start", "index": index,
                     "content_block": {"type": "text", "text": ""}})
    deltas = []
    for piece in pieces:
        deltas.append(send(assembler, {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "text_delta", "text": piece}}))
    send(assembler, {"type": "content_block_stop", "index": index})
    return deltas


def tool_block(assembler, index, tool_id, name, json_pieces):
    send(assembler, {"type": "content_block_start", "index": index,
                     "content_block": {"type": "tool_use", "id": tool_id, "name": name,
                                       "input": {}}})
    for piece in json_pieces:
        delta = {"type": "input_json_delta", "partial_json": piece}
        assert send(assembler, {"type": "content_block_delta", "index": index,
                                "delta": delta}) is None
    send(assembler, {"type": "content_block_stop", "index": index})


def finish(assembler, stop_reason, usage=None):
    send(assembler, {"type": "message_delta",
                     "delta": {"type": None, "stop_reason": stop_reason, "stop_sequence": None},
                     "usage": usage or {"output_tokens": 9}})
    send(assembler, {"type": "message_stop"})


def test_protocol_example_streams_hello_and_ends_the_turn():
    assembler, deltas = play(HELLO_STREAM)
    assert deltas == ["Hello"]
    assert assembler.text == "Hello"
    assert assembler.stop_reason == "end_turn"
    assert assembler.done
    assert assembler.message_id == "msg_1"
    assert assembler.model == "..."
    assert assembler.content == [{"type": "text", "text": "Hello"}]
    assert assembler.tool_calls == []


def test_not_done_before_message_stop():
    assembler, _ = play(HELLO_STREAM.split("event: message_stop")[0])
    assert not assembler.done
    assert assembler.stop_reason == "end_turn"


def test_protocol_example_with_crlf_lines_and_comments():
    stream = HELLO_STREAM.replace("\n\n", "\n: keep-alive\n\n").replace("\n", "\r\n")
    assembler, deltas = play(stream)
    assert deltas == ["Hello"]
    assert assembler.done


def test_usage_merges_message_start_and_message_delta():
    assembler = MessageAssembler()
    start(assembler, usage={"input_tokens": 11, "output_tokens": 1,
                            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048})
    text_block(assembler, 0, ["Hi"])
    finish(assembler, "end_turn", usage={"output_tokens": 6, "cache_read_input_tokens": None})
    assert assembler.usage == {"input_tokens": 11, "output_tokens": 6,
                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 2048,
                               "web_search_requests": 0, "web_fetch_requests": 0}


def test_usage_keys_are_present_even_when_not_reported():
    assembler, _ = play(HELLO_STREAM)
    assert assembler.usage == {"input_tokens": 11, "output_tokens": 6,
                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                               "web_search_requests": 0, "web_fetch_requests": 0}


def test_tool_use_input_is_assembled_from_partial_json_pieces():
    assembler = MessageAssembler()
    start(assembler)
    tool_block(assembler, 0, "toolu_01", "get_weather",
               ["", '{"loca', 'tion": "Par', 'is, FR", "days"', ": [1, 2]}"])
    finish(assembler, "tool_use")
    call = {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
            "input": {"location": "Paris, FR", "days": [1, 2]}}
    assert assembler.stop_reason == "tool_use"
    assert assembler.tool_calls == [call]
    assert assembler.content == [call]
    assert assembler.text == ""


def test_tool_use_without_input_deltas_has_empty_input():
    assembler = MessageAssembler()
    tool_block(assembler, 0, "toolu_02", "get_time", [])
    tool_block(assembler, 1, "toolu_03", "get_date", [""])
    inputs = [call["input"] for call in assembler.tool_calls]
    assert inputs == [{}, {}]


def test_text_blocks_and_tool_use_come_back_in_index_order():
    assembler = MessageAssembler()
    start(assembler)
    assert text_block(assembler, 0, ["Let me ", "check."]) == ["Let me ", "check."]
    assert text_block(assembler, 1, [" Also this."]) == [" Also this."]
    tool_block(assembler, 2, "toolu_9", "read_file", ['{"path": "/spiffs/x.md"}'])
    finish(assembler, "tool_use")
    assert assembler.content == [
        {"type": "text", "text": "Let me check."},
        {"type": "text", "text": " Also this."},
        {"type": "tool_use", "id": "toolu_9", "name": "read_file",
         "input": {"path": "/spiffs/x.md"}},
    ]
    assert assembler.text == "Let me check. Also this."
    assert [call["id"] for call in assembler.tool_calls] == ["toolu_9"]


def test_blocks_are_ordered_by_index_not_by_when_they_stopped():
    assembler = MessageAssembler()
    tool_block(assembler, 1, "toolu_1", "a", ["{}"])
    text_block(assembler, 0, ["first"])
    assert [block["type"] for block in assembler.content] == ["text", "tool_use"]


def test_blank_text_blocks_are_left_out_of_content():
    # The API rejects empty text blocks in a request, so they must not go back on a tool round.
    assembler = MessageAssembler()
    text_block(assembler, 0, [])
    text_block(assembler, 1, ["\n\n"])
    tool_block(assembler, 2, "toolu_1", "a", ["{}"])
    assert [block["type"] for block in assembler.content] == ["tool_use"]


def test_unknown_events_blocks_and_deltas_are_ignored_server_blocks_and_citations_kept():
    assembler = MessageAssembler()
    start(assembler)
    assert assembler.handle("ping", '{"type": "ping"}') is None
    assert assembler.handle("future_event", "not even json") is None
    send(assembler, {"type": "content_block_start", "index": 0,
                     "content_block": {"type": "thinking", "thinking": ""}})
    for delta in ({"type": "thinking_delta", "thinking": "hmm"},
                  {"type": "signature_delta", "signature": "EqQB"}):
        assert send(assembler, {"type": "content_block_delta", "index": 0, "delta": delta}) is None
    send(assembler, {"type": "content_block_stop", "index": 0})
    send(assembler, {"type": "content_block_start", "index": 1,
                     "content_block": {"type": "server_tool_use", "id": "srvtoolu_1",
                                       "name": "web_search", "input": {}}})
    send(assembler, {"type": "content_block_delta", "index": 1,
                     "delta": {"type": "input_json_delta", "partial_json": '{"q": 1}'}})
    send(assembler, {"type": "content_block_stop", "index": 1})
    send(assembler, {"type": "content_block_start", "index": 2,
                     "content_block": {"type": "text", "text": ""}})
    citation = {"type": "char_location", "cited_text": "x"}
    send(assembler, {"type": "content_block_delta", "index": 2,
                     "delta": {"type": "citations_delta", "citation": citation}})
    send(assembler, {"type": "content_block_delta", "index": 2,
                     "delta": {"type": "text_delta", "text": "Answer"}})
    send(assembler, {"type": "content_block_delta", "index": 2,
                     "delta": {"type": "brand_new_delta", "x": 1}})
    send(assembler, {"type": "content_block_stop", "index": 2})
    finish(assembler, "end_turn")
    # Claude's server tool call and the citations are kept: they go back as they came on a pause_turn
    assert assembler.content == [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": 1}},
        {"type": "text", "text": "Answer", "citations": [citation]}]
    assert assembler.text == "Answer" and assembler.tool_calls == []  # a citation without a URL: no link
    assert assembler.done


def test_event_without_event_line_is_named_by_its_data_type():
    assembler, deltas = play(HELLO_STREAM.replace("event: content_block_delta\n", ""))
    assert deltas == ["Hello"]


def test_error_event_raises_with_kind_and_message():
    assembler = MessageAssembler()
    start(assembler)
    data = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    err = raises(StreamError, assembler.handle, "error", data)
    assert err.kind == "overloaded_error"
    assert err.message == "Overloaded"
    assert "Overloaded" in str(err)


def test_error_event_without_details_still_raises():
    err = raises(StreamError, MessageAssembler().handle, "error", '{"type": "error"}')
    assert err.kind == "api_error"
    assert err.message


def test_error_event_arriving_through_the_sse_parser():
    stream = HELLO_STREAM.split("event: content_block_stop")[0] + (
        "event: error\n"
        'data: {"type":"error","error":{"type":"api_error","message":"Internal server error"}}\n'
        "\n")
    err = raises(StreamError, play, stream)
    assert (err.kind, err.message) == ("api_error", "Internal server error")


def test_malformed_json_is_a_bad_event():
    err = raises(StreamError, MessageAssembler().handle, "content_block_delta", '{"type": "con')
    assert err.kind == "bad_event"
    assert "JSON" in err.message
    err = raises(StreamError, MessageAssembler().handle, "message_start", "[1, 2]")
    assert err.kind == "bad_event"


def test_wrongly_shaped_events_are_bad_events():
    assembler = MessageAssembler()
    for name, data in (
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "x"}}),
        ("content_block_start", {"index": "0", "content_block": {"type": "text"}}),
        ("content_block_start", {"index": 0}),
        ("content_block_stop", {"index": 5}),
        ("message_start", {"message": "msg"}),
    ):
        err = raises(StreamError, assembler.handle, name, json.dumps(data))
        assert err.kind == "bad_event"
    text_block(assembler, 0, ["x"])
    err = raises(StreamError, send, assembler, {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}})
    assert "twice" in err.message


def test_invalid_tool_input_json_raises():
    assembler = MessageAssembler()
    err = raises(StreamError, tool_block, assembler, 0, "toolu_1", "get_weather",
                 ["", '{"location": "Par'])
    assert err.kind == "invalid_tool_input"
    assert "get_weather" in err.message
    err = raises(StreamError, tool_block, MessageAssembler(), 0, "toolu_1", "a", ["[1, 2]"])
    assert err.kind == "invalid_tool_input"


def test_tool_input_size_is_capped():
    assembler = MessageAssembler(tool_input_max=20)
    err = raises(StreamError, tool_block, assembler, 0, "toolu_1", "write_file",
                 ['{"text": "', "x" * 10, 'yyyyy"}'])
    assert err.kind == "tool_input_too_long"
    assert "20" in err.message


def test_reply_text_is_capped_at_text_max():
    assembler = MessageAssembler()
    piece = "x" * 1024
    text_block(assembler, 0, [piece] * (TEXT_MAX // 1024 - 1))
    text_block(assembler, 1, [piece])  # exactly TEXT_MAX over the two blocks: still fine
    assert len(assembler.reply_text) == TEXT_MAX  # counted from the pieces: no 64 KB join
    err = raises(StreamError, text_block, assembler, 2, ["x"])
    assert err.kind == "reply_too_long"


def test_reply_cap_is_adjustable():
    err = raises(StreamError, text_block, MessageAssembler(text_max=5), 0, ["abc", "def"])
    assert err.kind == "reply_too_long"


SEARCH_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9",
                 "content": [{"type": "web_search_result", "title": "Porto metro", "url": "https://www.metrodoporto.pt/hours",
                              "encrypted_content": "EqgfCioIARgBIiQ3YTAw", "page_age": "2 days ago"}]}


def test_a_web_search_turn_keeps_its_blocks_counts_searches_and_links_citations():
    assembler = MessageAssembler()
    start(assembler)
    send(assembler, {"type": "content_block_start", "index": 0,
                     "content_block": {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {}}})
    assert assembler.started_tool == "web_search"
    send(assembler, {"type": "content_block_delta", "index": 0,
                     "delta": {"type": "input_json_delta", "partial_json": '{"query": "porto metro hours"}'}})
    send(assembler, {"type": "content_block_stop", "index": 0})
    send(assembler, {"type": "content_block_start", "index": 1, "content_block": SEARCH_RESULT})
    send(assembler, {"type": "content_block_stop", "index": 1})
    citation = {"type": "web_search_result_location", "url": "https://www.metrodoporto.pt/hours",
                "title": "Porto metro", "encrypted_index": "Eo8BCioIAhgB", "cited_text": "runs until 1 am"}
    send(assembler, {"type": "content_block_start", "index": 2,
                     "content_block": {"type": "text", "text": "", "citations": []}})
    send(assembler, {"type": "content_block_delta", "index": 2, "delta": {"type": "citations_delta", "citation": citation}})
    assert send(assembler, {"type": "content_block_delta", "index": 2,
                            "delta": {"type": "text_delta", "text": "The metro runs until 1 am."}}) == "The metro runs until 1 am."
    links = send(assembler, {"type": "content_block_stop", "index": 2})  # streamed like text, after the passage
    assert links == " ([metrodoporto.pt](https://www.metrodoporto.pt/hours))"
    send(assembler, {"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}})
    send(assembler, {"type": "content_block_delta", "index": 3, "delta": {"type": "citations_delta", "citation": citation}})
    send(assembler, {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": " Trams too."}})
    send(assembler, {"type": "content_block_stop", "index": 3})
    finish(assembler, "end_turn", usage={"output_tokens": 40, "server_tool_use": {"web_search_requests": 1}})
    assert assembler.content[0] == {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search",
                                    "input": {"query": "porto metro hours"}}
    assert assembler.content[1] == SEARCH_RESULT and assembler.searched
    assert assembler.content[2]["citations"] == [citation]
    # The page is linked once, after the first passage that cites it
    assert assembler.text == ("The metro runs until 1 am. ([metrodoporto.pt](https://www.metrodoporto.pt/hours))"
                              " Trams too.")
    assert assembler.usage["web_search_requests"] == 1 and assembler.usage["web_fetch_requests"] == 0


def test_too_many_server_blocks_stop_the_stream():
    assembler = MessageAssembler()
    start(assembler)
    try:
        for i in range(SERVER_BLOCKS_MAX + 1):
            block = dict(SEARCH_RESULT)
            send(assembler, {"type": "content_block_start", "index": i, "content_block": block})
            send(assembler, {"type": "content_block_stop", "index": i})
        raise AssertionError("no error")
    except StreamError as exc:
        assert exc.kind == "too_many_server_blocks"


def test_a_web_fetch_result_is_kept_whole_and_counted():
    assembler = MessageAssembler()
    start(assembler)
    send(assembler, {"type": "content_block_start", "index": 0,
                     "content_block": {"type": "server_tool_use", "id": "srvtoolu_f", "name": "web_fetch", "input": {}}})
    send(assembler, {"type": "content_block_delta", "index": 0,
                     "delta": {"type": "input_json_delta", "partial_json": '{"url": "https://example.com/a"}'}})
    send(assembler, {"type": "content_block_stop", "index": 0})
    result = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_f",
              "content": {"type": "web_fetch_result", "url": "https://example.com/a",
                          "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                                     "data": "Page text"}}}}
    send(assembler, {"type": "content_block_start", "index": 1, "content_block": result})
    send(assembler, {"type": "content_block_stop", "index": 1})
    text_block(assembler, 2, ["The page says hello."])
    finish(assembler, "end_turn", usage={"output_tokens": 9, "server_tool_use": {"web_fetch_requests": 1}})
    assert assembler.content[1] == result and assembler.text == "The page says hello."
    assert assembler.usage["web_fetch_requests"] == 1 and assembler.usage["web_search_requests"] == 0


def test_a_long_reply_is_kept_in_small_pieces_and_joined_only_on_demand():
    from mimi.llm.text import Text

    assembler = MessageAssembler()
    start(assembler)
    words = ["word{} ".format(i) for i in range(500)]  # about 4 KB in small deltas
    text_block(assembler, 0, ["  \n"] + words + [" \n"])
    finish(assembler, "end_turn")
    reply = assembler.reply_text
    assert isinstance(reply, Text)
    assert max(len(piece) for piece in reply) <= 600  # no piece grows with the reply
    assert str(reply) == assembler.text == "  \n" + "".join(words) + " \n"
    assert len(reply) == len(assembler.text)
    assert str(reply.strip()) == assembler.text.strip()
    assert assembler.content == [{"type": "text", "text": assembler.text}]
    assert assembler.blocks()[0]["text"].text() == assembler.text  # TextPieces: written into a request
    short = MessageAssembler()  # a text within one escaped slice is sent back as one str (file_pieces not loaded)
    start(short)
    text_block(short, 0, ["Let me ", "look."])
    finish(short, "end_turn")
    assert short.blocks() == [{"type": "text", "text": "Let me look."}]


def test_text_strip_is_str_strip():
    from mimi.llm.text import Text

    for pieces in ([], [""], [" ", "\n", ""], ["  a"], ["a  "], [" ", " a b ", " "], ["", " x", "", "y ", "\t", ""],
                   ["\n\nHi", " there", "\n"], ["   ", "caf\u00e9", "   "]):
        joined = "".join(pieces)
        assert str(Text(pieces).strip()) == joined.strip(), pieces
        assert len(Text(pieces).strip()) == len(joined.strip())
        assert bool(Text(pieces).strip()) == bool(joined.strip())


def test_a_message_joins_a_reply_in_pieces_only_when_its_content_is_read():
    from mimi.bus.message import Message
    from mimi.llm.text import Text

    message = Message("cli", "console", Text(["Hello ", "there"]), {"kind": "reply"})
    assert len(message.text) == 11 and "11 chars" in repr(message)
    assert not isinstance(message.text, str)  # the console ends its streamed line without the text
    assert message.content == "Hello there" and message.text == "Hello there"
    assert Message("cli", "console", "plain").content == "plain"
