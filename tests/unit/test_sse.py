# The incremental SSE parser: WHATWG EventSource line rules, one line at a time.
import json

from support import raises

from mimi.llm.sse import EVENT_MAX, SSEError, SSEParser


def events_of(lines, parser=None):
    """Every event the parser completes while fed these lines."""
    parser = parser or SSEParser()
    found = []
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            found.append(event)
    return found


def test_event_completes_only_at_the_blank_line():
    parser = SSEParser()
    assert parser.feed("event: ping") is None
    assert parser.feed('data: {"type": "ping"}') is None
    assert parser.feed("") == ("ping", '{"type": "ping"}')


def test_name_defaults_to_message_and_resets_after_each_event():
    lines = ["event: first", "data: 1", "", "data: 2", ""]
    assert events_of(lines) == [("first", "1"), ("message", "2")]


def test_crlf_and_lf_terminated_lines_are_the_same():
    lines = ["event: a\r", "data: x\r", "\r", "event: b\r\n", "data: y\n", "\n"]
    assert events_of(lines) == [("a", "x"), ("b", "y")]


def test_comment_lines_are_ignored():
    lines = [": keep-alive", "event: a", ":data: not data", "data: x", ":", ""]
    assert events_of(lines) == [("a", "x")]


def test_several_data_lines_join_with_newline():
    lines = ["event: message_delta", 'data: {"type": "message_delta",', 'data: "n": 1}', ""]
    (name, data), = events_of(lines)
    assert name == "message_delta"
    assert data == '{"type": "message_delta",\n"n": 1}'
    assert json.loads(data) == {"type": "message_delta", "n": 1}


def test_only_one_space_after_the_colon_is_stripped():
    lines = ["data:x", "", "data:  two spaces", "", "event:tight", "data:", ""]
    assert events_of(lines) == [("message", "x"), ("message", " two spaces"), ("tight", "")]


def test_value_may_contain_colons():
    assert events_of(['data: {"a": "b:c"}', ""]) == [("message", '{"a": "b:c"}')]


def test_field_without_colon_has_an_empty_value():
    assert events_of(["data", "data", ""]) == [("message", "\n")]
    assert events_of(["event", "data: x", ""]) == [("message", "x")]


def test_blank_line_without_data_dispatches_nothing_and_forgets_the_name():
    lines = ["", "", "event: orphan", "", "data: x", ""]
    assert events_of(lines) == [("message", "x")]


def test_id_retry_and_unknown_fields_are_ignored():
    lines = ["id: 7", "retry: 3000", "event: a", "colour: blue", "data: x", "Data: y", ""]
    assert events_of(lines) == [("a", "x")]


def test_byte_order_mark_at_stream_start_is_skipped():
    assert events_of(["\ufeffdata: x", ""]) == [("message", "x")]


def test_finish_drops_an_event_without_its_blank_line():
    parser = SSEParser()
    assert events_of(["event: a", "data: complete", ""], parser) == [("a", "complete")]
    parser.feed("data: cut off")
    assert parser.finish() is None
    assert parser.feed("") is None  # the cut-off data did not survive finish()


def test_event_size_cap_raises_a_clear_error():
    parser = SSEParser(event_max=100)
    parser.feed("data: " + "a" * 50)
    err = raises(SSEError, parser.feed, "data: " + "b" * 50)  # 50 + "\n" + 50 = 101
    assert isinstance(err, ValueError)
    assert "100" in str(err)


def test_after_an_oversized_event_its_rest_is_dropped_and_the_next_one_parses():
    parser = SSEParser(event_max=10)
    parser.feed("event: big")
    raises(SSEError, parser.feed, "data: " + "x" * 11)
    assert parser.feed("data: tail of the oversized event") is None
    assert parser.feed("") is None
    assert events_of(["event: small", "data: ok", ""], parser) == [("small", "ok")]


def test_default_cap_is_event_max():
    assert EVENT_MAX == 64 * 1024
    parser = SSEParser()
    parser.feed("data: " + "x" * EVENT_MAX)
    assert parser.feed("") == ("message", "x" * EVENT_MAX)
    parser.feed("data: " + "y" * (EVENT_MAX // 2))
    raises(SSEError, parser.feed, "data: " + "y" * (EVENT_MAX // 2))  # one "\n" over
