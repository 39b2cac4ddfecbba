# Property tests (CPython, hypothesis) of the SSE parser and the Claude stream assembler.
import json
import os
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in ("firmware", "host_sim/standins"):
    _full = os.path.join(_ROOT, _p)
    if _full not in sys.path:
        sys.path.insert(0, _full)

from mimi.llm.sse import SSEError, SSEParser  # noqa: E402
from mimi.llm.stream import MessageAssembler, StreamError  # noqa: E402

# One line's worth of text: anything but a line terminator (and lone surrogates, not UTF-8).
line_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=20
)
# Several lines' worth: "\n" allowed, it becomes several data lines.
multiline_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r"),
                         max_size=40)


def _field(draw, name, value):
    """name/value written any legal way: with or without the optional space, no colon if empty."""
    if value == "" and draw(st.booleans()):
        return name
    if value.startswith(" ") or draw(st.booleans()):
        return name + ": " + value
    return name + ":" + value


@st.composite
def noise_lines(draw):
    """Lines the parser must skip inside or between events: comments, id, retry, unknown fields."""
    return draw(st.lists(st.one_of(
        line_text.map(lambda t: ":" + t),
        line_text.map(lambda t: "id: " + t),
        st.integers(0, 10**6).map(lambda n: "retry: {}".format(n)),
        st.sampled_from(["colour: blue", "Data: x", "EVENT: y", "id", "retry"]),
    ), max_size=2))


@st.composite
def sse_streams(draw):
    """(lines of an SSE stream, the events it carries)."""
    events = draw(st.lists(st.tuples(line_text, multiline_text), max_size=4))
    lines = []
    for name, data in events:
        lines += draw(noise_lines())
        lines += [""] * draw(st.integers(0, 2))  # blank lines with no data dispatch nothing
        if name or draw(st.booleans()):
            lines.append(_field(draw, "event", name))
        for piece in data.split("\n"):
            lines += draw(noise_lines())
            lines.append(_field(draw, "data", piece))
        lines += draw(noise_lines())
        lines.append("")
    expected = [(name or "message", data) for name, data in events]
    return lines, expected


def split_lines(chunks):
    """Reassemble byte chunks into text lines, as an HTTP body reader does (terminator kept)."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode() + "\n"
    if pending:
        yield pending.decode()


@st.composite
def byte_chunks(draw, body):
    """body cut at arbitrary byte positions (even inside a UTF-8 character)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=8)))
    chunks, last = [], 0
    for cut in cuts + [len(body)]:
        chunks.append(body[last:cut])
        last = cut
    return chunks


@settings(max_examples=150)
@given(st.data())
def test_any_split_and_line_ending_gives_the_same_events(data):
    lines, expected = data.draw(sse_streams())
    endings = data.draw(st.lists(st.sampled_from(["\n", "\r\n"]), min_size=len(lines),
                                 max_size=len(lines)))
    body = "".join(line + end for line, end in zip(lines, endings)).encode()
    parser = SSEParser()
    got = []
    for line in split_lines(data.draw(byte_chunks(body))):
        event = parser.feed(line)
        if event is not None:
            got.append(event)
    parser.finish()
    assert got == expected


@settings(max_examples=60)
@given(sse_streams())
def test_lines_without_terminators_give_the_same_events(stream):
    lines, expected = stream
    parser = SSEParser()
    got = [event for event in map(parser.feed, lines) if event is not None]
    assert got == expected


@given(st.lists(line_text, max_size=6), st.booleans())
def test_an_event_cut_off_before_its_blank_line_never_appears(data_lines, named):
    parser = SSEParser()
    lines = (["event: cut"] if named else []) + ["data: " + d for d in data_lines]
    assert all(parser.feed(line) is None for line in lines)
    parser.finish()
    assert parser.feed("") is None


# ---- garbage in: only the two documented errors may come out ----------------------------

_NAMES = ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
          "message_delta", "message_stop", "error", "ping", "message", "other"]
_KEYS = ["type", "index", "delta", "text", "partial_json", "content_block", "message", "usage",
         "error", "id", "name", "input", "stop_reason", "input_tokens", "output_tokens"]
_WORDS = _NAMES + ["text", "tool_use", "text_delta", "input_json_delta", "thinking",
                   "thinking_delta", "overloaded_error", "end_turn", "{", '{"a": 1}', "[1]", ""]

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(_WORDS), line_text),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5)),
    max_leaves=6,
)
events_json = st.dictionaries(st.sampled_from(_KEYS), json_values, max_size=6)

garbage_lines = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "", ":", "data", "event", "data:", "event: error", "\r"]),
    st.sampled_from(_NAMES).map(lambda name: "event: " + name),
    events_json.map(lambda obj: "data: " + json.dumps(obj)),
    st.text(st.sampled_from('{}[]":, 019truefalsn'), max_size=30).map(lambda t: "data:" + t),
)


@settings(max_examples=200)
@given(st.lists(garbage_lines, max_size=30))
def test_garbage_lines_raise_only_sse_or_stream_errors(lines):
    parser = SSEParser(event_max=200)
    assembler = MessageAssembler(text_max=100, tool_input_max=50)
    for line in lines:
        try:
            event = parser.feed(line)
            if event is not None:
                piece = assembler.handle(*event)
                assert piece is None or isinstance(piece, str)
        except (SSEError, StreamError):
            pass  # documented failures; both parser and assembler must stay usable after them
    parser.finish()
    assert isinstance(assembler.content, list)
    assert isinstance(assembler.text, str)
    assert isinstance(assembler.tool_calls, list)


@st.composite
def near_valid_events(draw):
    """A well-formed event of a random type, with some of its fields swapped for junk."""
    name = draw(st.sampled_from(_NAMES))
    index = draw(st.integers(-1, 2))
    block = {"type": draw(st.sampled_from(["text", "tool_use", "thinking", "x"])), "text": "",
             "id": "toolu_1", "name": "t", "input": {}}
    delta = {"type": draw(st.sampled_from(["text_delta", "input_json_delta", "thinking_delta"])),
             "text": draw(line_text), "partial_json": draw(st.sampled_from(["", "{", '"a"', "}"])),
             "stop_reason": "end_turn"}
    usage = {"input_tokens": 3, "output_tokens": None}
    event = {"type": name, "index": index, "content_block": block, "delta": delta,
             "usage": usage, "message": {"id": "msg_1", "model": "m", "usage": usage},
             "error": {"type": "overloaded_error", "message": "Overloaded"}}
    for target in (event, block, delta, usage):
        for key in draw(st.lists(st.sampled_from(sorted(target)), max_size=2)):
            if draw(st.booleans()):
                target.pop(key, None)
            else:
                target[key] = draw(json_values)
    return name, json.dumps(event)


@settings(max_examples=120)
@given(st.lists(near_valid_events(), max_size=12))
def test_wrongly_shaped_events_raise_only_stream_errors(events):
    assembler = MessageAssembler(text_max=50, tool_input_max=4)
    for name, data_str in events:
        try:
            assembler.handle(name, data_str)
        except StreamError as err:
            assert isinstance(err.kind, str) and err.kind
            assert isinstance(err.message, str) and err.message
    for block in assembler.content:
        assert block["type"] in ("text", "tool_use")
        assert block["type"] == "text" or isinstance(block["input"], dict)


# ---- assembly: whatever the pieces, the result is the whole --------------------------------

tool_inputs = st.dictionaries(
    line_text,
    st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), line_text),
                 lambda inner: st.one_of(st.lists(inner, max_size=3),
                                         st.dictionaries(line_text, inner, max_size=3)),
                 max_leaves=8),
    max_size=4,
)


def _cut(draw, text):
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces, last = [], 0
    for cut in cuts + [len(text)]:
        pieces.append(text[last:cut])
        last = cut
    return pieces


def _send(assembler, obj):
    return assembler.handle(obj["type"], json.dumps(obj))


@given(st.data())
def test_text_and_tool_input_are_reassembled_from_any_pieces(data):
    text = data.draw(multiline_text)
    tool_input = data.draw(tool_inputs)
    text_pieces = _cut(data.draw, text)
    json_pieces = [""] + _cut(data.draw, json.dumps(tool_input))
    assembler = MessageAssembler()
    _send(assembler, {"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}})
    deltas = [_send(assembler, {"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": piece}})
              for piece in text_pieces]
    _send(assembler, {"type": "content_block_stop", "index": 0})
    _send(assembler, {"type": "content_block_start", "index": 1,
                      "content_block": {"type": "tool_use", "id": "toolu_x", "name": "t",
                                        "input": {}}})
    for piece in json_pieces:
        _send(assembler, {"type": "content_block_delta", "index": 1,
                          "delta": {"type": "input_json_delta", "partial_json": piece}})
    _send(assembler, {"type": "content_block_stop", "index": 1})
    assert deltas == text_pieces
    assert assembler.text == text
    assert assembler.tool_calls == [{"type": "tool_use", "id": "toolu_x", "name": "t",
                                     "input": tool_input}]
