# The fake Anthropic API speaks the real wire protocol, validation and faults included.
import asyncio
import http.client
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time

import aiohttp
import pytest

from tests.certs import make_test_ca, server_context
from host_sim.fake_anthropic import (
    FakeAnthropic, cut, error, garbage, long_line, stall, stream_error, text, tool_use,
    tool_use_multi)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "sk-ant-test-key"
GOOD_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01",
                "content-type": "application/json"}


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def request_body(content="hello there", stream=True, **extra):
    body = {"model": "claude-test", "max_tokens": 256, "stream": stream,
            "messages": [{"role": "user", "content": content}]}
    body.update(extra)
    return body


def port_of(url):
    return int(url.rsplit(":", 1)[1])


def post(url, body, headers=None, method="POST", path="/v1/messages", timeout=5, context=None):
    """(status, lower-case headers, body bytes, complete?) through http.client."""
    all_headers = dict(GOOD_HEADERS)
    all_headers.update(headers or {})
    payload = body if isinstance(body, (bytes, str)) else json.dumps(body)
    if context is None:
        conn = http.client.HTTPConnection("127.0.0.1", port_of(url), timeout=timeout)
    else:
        conn = http.client.HTTPSConnection("localhost", port_of(url), timeout=timeout,
                                           context=context)
    try:
        conn.request(method, path, payload, all_headers)
        response = conn.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        try:
            return response.status, headers, response.read(), True
        except http.client.IncompleteRead as exc:
            return response.status, headers, exc.partial, False
    finally:
        conn.close()


def raw_exchange(url, body, timeout=5):
    """The response bytes exactly as they crossed the socket, up to the server closing it."""
    payload = json.dumps(body).encode()
    head = ["POST /v1/messages HTTP/1.1", "Host: 127.0.0.1", "Connection: close",
            "Content-Length: {}".format(len(payload))]
    head += ["{}: {}".format(k, v) for k, v in GOOD_HEADERS.items()]
    sock = socket.create_connection(("127.0.0.1", port_of(url)), timeout=timeout)
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
        data = b""
        while True:
            piece = sock.recv(65536)
            if not piece:
                return data
            data += piece
    finally:
        sock.close()


def sse_events(data):
    """A conforming SSE parser: comments, `data:` without space, multi-line data, any event."""
    events, name, lines = [], None, []
    for line in data.decode("utf-8").split("\n"):
        if line == "":
            if lines:
                events.append((name or "message", "\n".join(lines)))
            name, lines = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                lines.append(value)
    return events


def decoded(data):
    """[(event name, parsed JSON)] of a stream."""
    return [(name, json.loads(payload)) for name, payload in sse_events(data)]


def streamed_text(events):
    return "".join(d["delta"]["text"] for n, d in events
                   if n == "content_block_delta" and d["delta"]["type"] == "text_delta")


def error_body(data):
    body = json.loads(data)
    assert body["type"] == "error" and body["request_id"].startswith("req_")
    return body["error"]["type"], body["error"]["message"]


# ---- a normal streamed reply ----

def test_default_brain_streams_the_protocol_event_sequence(fake):
    status, headers, data, complete = post(fake.url, request_body("hello there"))
    assert (status, complete) == (200, True)
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["request-id"].startswith("req_")
    assert headers["transfer-encoding"] == "chunked"
    events = decoded(data)
    names = [n for n, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert set(names[3:-3]) == {"content_block_delta"} and len(names) > 7
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert all(d["type"] == n for n, d in events)
    message = events[0][1]["message"]
    assert message["role"] == "assistant" and message["content"] == []
    assert message["id"].startswith("msg_") and message["model"] == "claude-test"
    assert message["stop_reason"] is None
    assert set(message["usage"]) == {"input_tokens", "output_tokens",
                                     "cache_creation_input_tokens", "cache_read_input_tokens"}
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    assert streamed_text(events) == "You said: hello there"
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] > 0


def test_wire_layout_is_exactly_event_data_blank_line(fake):
    fake.script(text("Hi"))
    _, _, data, _ = post(fake.url, request_body())
    blocks = data.decode().split("\n\n")
    assert blocks[-1] == ""
    for block in blocks[:-1]:
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
    assert 'event: ping\ndata: {"type": "ping"}\n\n' in data.decode()


def test_default_brain_reads_text_blocks_and_honours_max_tokens(fake):
    content = [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]
    _, _, data, _ = post(fake.url, request_body(content))
    assert streamed_text(decoded(data)) == "You said: first\nsecond"
    _, _, data, _ = post(fake.url, request_body("x" * 100, max_tokens=3))
    events = decoded(data)
    assert streamed_text(events) == ("You said: " + "x" * 100)[:12]
    assert events[-2][1]["delta"]["stop_reason"] == "max_tokens"


def test_scripted_text_is_chunked_and_consumed_in_order(fake):
    fake.script(text("abcdefghij", chunk=3), text("second", stop_reason="max_tokens"))
    assert fake.pending == 2
    _, _, data, _ = post(fake.url, request_body())
    events = decoded(data)
    pieces = [d["delta"]["text"] for n, d in events if n == "content_block_delta"]
    assert pieces == ["abc", "def", "ghi", "j"]
    _, _, data, _ = post(fake.url, request_body())
    events = decoded(data)
    assert streamed_text(events) == "second"
    assert events[-2][1]["delta"]["stop_reason"] == "max_tokens"
    assert fake.pending == 0
    _, _, data, _ = post(fake.url, request_body("back to default"))
    assert streamed_text(decoded(data)) == "You said: back to default"


def test_chunks_are_flushed_as_they_are_written(fake):
    fake.script(text("abcdefgh", chunk=2, delay=0.15))

    async def arrival_times():
        async with aiohttp.ClientSession() as session:
            async with session.post(fake.url + "/v1/messages", json=request_body(),
                                    headers={"x-api-key": KEY,
                                             "anthropic-version": "2023-06-01"}) as response:
                times = []
                async for line in response.content:
                    if b"text_delta" in line:
                        times.append(time.monotonic())
                return times

    times = asyncio.run(arrival_times())
    assert len(times) == 4
    assert times[-1] - times[0] >= 0.4  # deltas arrived one by one, not in one final burst


def test_stream_false_returns_one_json_message(fake):
    fake.script(tool_use("get_time", {"tz": "UTC"}, id="toolu_01abc", text="Checking"))
    status, headers, data, _ = post(fake.url, request_body(stream=False))
    assert status == 200 and headers["content-type"].startswith("application/json")
    message = json.loads(data)
    assert message["type"] == "message" and message["stop_reason"] == "tool_use"
    assert message["content"] == [
        {"type": "text", "text": "Checking"},
        {"type": "tool_use", "id": "toolu_01abc", "name": "get_time", "input": {"tz": "UTC"}}]
    assert message["usage"]["output_tokens"] > 0


# ---- tool use ----

def test_tool_use_input_arrives_as_json_pieces_that_concatenate(fake):
    args = {"city": "Paris", "days": [1, 2, 3], "note": "caf\u00e9 \"quoted\""}
    fake.script(tool_use("get_weather", args, text="Let me check.", chunk=5))
    _, _, data, _ = post(fake.url, request_body())
    events = decoded(data)
    starts = [d for n, d in events if n == "content_block_start"]
    assert starts[0]["content_block"] == {"type": "text", "text": ""}
    block = starts[1]["content_block"]
    assert (starts[1]["index"], block["type"], block["name"], block["input"]) == \
        (1, "tool_use", "get_weather", {})
    assert block["id"].startswith("toolu_")
    parts = [d["delta"]["partial_json"] for n, d in events
             if n == "content_block_delta" and d["index"] == 1]
    assert parts[0] == "" and len(parts) > 3
    assert all(d["delta"]["type"] == "input_json_delta" for n, d in events
               if n == "content_block_delta" and d["index"] == 1)
    assert json.loads("".join(parts)) == args
    assert streamed_text(events) == "Let me check."
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    stops = [d["index"] for n, d in events if n == "content_block_stop"]
    assert stops == [0, 1]


def test_several_tool_calls_in_one_reply(fake):
    fake.script(tool_use_multi([("a", {"x": 1}), ("b", {}, "toolu_01fixed")]))
    _, _, data, _ = post(fake.url, request_body())
    events = decoded(data)
    blocks = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["name"] for b in blocks] == ["a", "b"] and blocks[1]["id"] == "toolu_01fixed"
    for index, expected in ((0, {"x": 1}), (1, {})):
        parts = [d["delta"]["partial_json"] for n, d in events
                 if n == "content_block_delta" and d["index"] == index]
        assert json.loads("".join(parts)) == expected
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def tool_turns(answer_ids, extra_first=None):
    use = {"type": "tool_use", "id": "toolu_01a", "name": "t", "input": {}}
    results = [{"type": "tool_result", "tool_use_id": i, "content": "42", "is_error": False}
               for i in answer_ids]
    if extra_first:
        results.insert(0, extra_first)
    return [{"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "text", "text": "checking"}, use]},
            {"role": "user", "content": results}]


def test_tool_results_must_answer_the_previous_tool_use(fake):
    status, _, data, _ = post(fake.url, dict(request_body(), messages=tool_turns(["toolu_01a"])))
    assert status == 200
    assert streamed_text(decoded(data)) == "Tool result: 42"
    status, _, data, _ = post(fake.url, dict(request_body(), messages=tool_turns(["toolu_01zz"])))
    kind, message = error_body(data)
    assert (status, kind) == (400, "invalid_request_error")
    assert "toolu_01zz" in message and "tool_use_id" in message
    unanswered = tool_turns([], extra_first={"type": "text", "text": "no results here"})
    status, _, data, _ = post(fake.url, dict(request_body(), messages=unanswered))
    assert status == 400 and "without `tool_result`" in error_body(data)[1]
    text_first = tool_turns(["toolu_01a"], extra_first={"type": "text", "text": "here"})
    status, _, data, _ = post(fake.url, dict(request_body(), messages=text_first))
    assert status == 400 and "must come first" in error_body(data)[1]


# ---- validation like the real API ----

def test_wrong_api_key_is_401_with_the_real_body(fake):
    fake.script(text("never sent"))
    status, headers, data, _ = post(fake.url, request_body(), {"x-api-key": "sk-ant-wrong"})
    assert status == 401 and headers["content-type"].startswith("application/json")
    body = json.loads(data)
    assert body == {"type": "error", "request_id": body["request_id"],
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    assert headers["request-id"] == body["request_id"]
    assert b"sk-ant-wrong" not in data
    assert fake.pending == 1  # a refused request does not eat the script


def without(name):
    headers = dict(GOOD_HEADERS)
    del headers[name]
    return headers


REFUSED = [
    # (headers, body, status, error type, words of the message)
    (without("x-api-key"), request_body(), 401, "authentication_error", "x-api-key"),
    (without("anthropic-version"), request_body(), 400, "invalid_request_error",
     "anthropic-version"),
    (dict(GOOD_HEADERS, **{"anthropic-version": "2099-01-01"}), request_body(), 400,
     "invalid_request_error", "anthropic-version"),
    (dict(GOOD_HEADERS, **{"content-type": "text/plain"}), request_body(), 400,
     "invalid_request_error", "content-type"),
    (None, "{not json", 400, "invalid_request_error", "JSON"),
    (None, "[1, 2]", 400, "invalid_request_error", "object"),
    (None, {"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, 400,
     "invalid_request_error", "model: Field required"),
    (None, dict(request_body(), model=7), 400, "invalid_request_error", "model"),
    (None, dict(request_body(), max_tokens=0), 400, "invalid_request_error", "max_tokens"),
    (None, dict(request_body(), max_tokens=True), 400, "invalid_request_error", "max_tokens"),
    (None, dict(request_body(), max_tokens="9"), 400, "invalid_request_error", "max_tokens"),
    (None, dict(request_body(), messages=[]), 400, "invalid_request_error", "messages"),
    (None, dict(request_body(), messages=[{"role": "assistant", "content": "hi"}]), 400,
     "invalid_request_error", "first message"),
    (None, dict(request_body(), messages=[{"role": "system", "content": "be nice"},
                                          {"role": "user", "content": "hi"}]),
     400, "invalid_request_error", "top-level `system`"),
    (None, dict(request_body(), messages=[{"role": "robot", "content": "hi"}]), 400,
     "invalid_request_error", "role"),
    (None, dict(request_body(), messages=[{"role": "user", "content": ""}]), 400,
     "invalid_request_error", "non-empty"),
    (None, dict(request_body(), messages=[{"role": "user", "content": 5}]), 400,
     "invalid_request_error", "content"),
    (None, dict(request_body(), messages=[{"role": "user", "content": [{"type": "wat"}]}]),
     400, "invalid_request_error", "wat"),
    (None, dict(request_body(), system={"text": "x"}), 400, "invalid_request_error", "system"),
    (None, dict(request_body(), system=[{"type": "text", "text": "x",
                                         "cache_control": {"type": "forever"}}]),
     400, "invalid_request_error", "cache_control"),
    (None, dict(request_body(), stream="yes"), 400, "invalid_request_error", "stream"),
    (None, dict(request_body(), temprature=0.5), 400, "invalid_request_error", "temprature"),
    (None, dict(request_body(), tools=[{"name": "bad name!", "input_schema": {}}]), 400,
     "invalid_request_error", "name"),
    (None, dict(request_body(), tools=[{"name": "t", "input_schema": {"type": "object"}}] * 2),
     400, "invalid_request_error", "unique"),
]


@pytest.mark.parametrize("headers,body,status,kind,words", REFUSED)
def test_requests_the_real_api_refuses(fake, headers, body, status, kind, words):
    all_headers = GOOD_HEADERS if headers is None else headers
    conn = http.client.HTTPConnection("127.0.0.1", port_of(fake.url), timeout=5)
    payload = body if isinstance(body, str) else json.dumps(body)
    conn.request("POST", "/v1/messages", payload, all_headers)
    response = conn.getresponse()
    got_kind, message = error_body(response.read())
    conn.close()
    assert (response.status, got_kind) == (status, kind)
    assert words in message


def test_unknown_model_is_404_only_when_models_are_configured():
    with FakeAnthropic(known_models=["claude-test"]) as fake:
        assert post(fake.url, request_body())[0] == 200
        status, _, data, _ = post(fake.url, dict(request_body(), model="claude-nope"))
        assert status == 404 and error_body(data) == ("not_found_error", "model: claude-nope")


def test_oversized_body_is_413_and_unknown_routes_are_refused():
    with FakeAnthropic(max_body_bytes=2000) as fake:
        assert post(fake.url, request_body("x" * 1000))[0] == 200
        status, _, data, _ = post(fake.url, request_body("x" * 3000))
        assert status == 413 and error_body(data)[0] == "request_too_large"
        status, _, data, _ = post(fake.url, request_body(), path="/v1/complete")
        assert status == 404 and error_body(data)[0] == "not_found_error"
        status, _, data, _ = post(fake.url, "", method="GET")
        assert status == 405


def test_a_well_formed_full_request_is_accepted(fake):
    body = request_body(
        system=[{"type": "text", "text": "You are Mimi.", "cache_control": {"type": "ephemeral"}}],
        tools=[{"name": "get_time", "description": "Clock", "input_schema": {"type": "object"}}],
        temperature=0.2)
    body["messages"] += [{"role": "assistant", "content": "Hi!"},
                         {"role": "user", "content": [{"type": "text", "text": "again"}]}]
    status, _, data, _ = post(fake.url, body)
    assert status == 200 and streamed_text(decoded(data)) == "You said: again"


# ---- scripted faults ----

@pytest.mark.parametrize("status,kind", [(400, "invalid_request_error"),
                                         (401, "authentication_error"),
                                         (403, "permission_error"), (404, "not_found_error"),
                                         (413, "request_too_large"), (429, "rate_limit_error"),
                                         (500, "api_error"), (529, "overloaded_error")])
def test_scripted_errors_have_the_real_status_and_type(fake, status, kind):
    fake.script(error(status))
    got, headers, data, _ = post(fake.url, request_body())
    assert got == status and error_body(data)[0] == kind
    assert "retry-after" not in headers


def test_rate_limit_error_carries_retry_after(fake):
    fake.script(error(429, "rate_limit_error", "slow down", retry_after=7))
    status, headers, data, _ = post(fake.url, request_body())
    assert status == 429 and headers["retry-after"] == "7"
    assert error_body(data) == ("rate_limit_error", "slow down")
    assert post(fake.url, request_body())[0] == 200  # the error was used up


def test_stream_error_is_an_error_event_inside_a_200_stream(fake):
    fake.script(stream_error("partial "))
    status, _, data, complete = post(fake.url, request_body())
    assert status == 200 and complete
    events = decoded(data)
    assert streamed_text(events) == "partial "
    assert events[-1] == ("error", {"type": "error", "error": {"type": "overloaded_error",
                                                               "message": "Overloaded"}})
    assert "message_stop" not in [n for n, _ in events]


def test_stream_error_without_streaming_is_the_http_error(fake):
    fake.script(stream_error("x", "api_error", "boom"))
    status, _, data, _ = post(fake.url, request_body(stream=False))
    assert status == 500 and error_body(data) == ("api_error", "boom")


def test_cut_closes_the_connection_in_the_middle_of_an_event(fake):
    fake.script(text("ok"), cut("before the cut", chunk=100))
    whole = raw_exchange(fake.url, request_body())
    assert whole.endswith(b"\r\n0\r\n\r\n")  # a normal stream ends with the last chunk
    broken = raw_exchange(fake.url, request_body())
    assert broken.startswith(b"HTTP/1.1 200")
    assert not broken.endswith(b"0\r\n\r\n")
    assert b"before the cut" in broken and b"message_stop" not in broken
    status, _, data, complete = post(fake.url, request_body())  # the server itself carries on
    assert (status, complete) == (200, True)
    fake.script(cut("abc"))
    status, _, data, complete = post(fake.url, request_body())
    assert (status, complete) == (200, False)
    assert not data.endswith(b"\n\n") and data.rsplit(b"\n\n", 1)[1].startswith(b"event: ")


def test_stall_goes_silent_then_finishes(fake):
    fake.script(stall("before ", 0.6, "after"))
    started = time.monotonic()
    status, _, data, complete = post(fake.url, request_body())
    assert time.monotonic() - started >= 0.6
    assert (status, complete) == (200, True)
    assert streamed_text(decoded(data)) == "before after"
    fake.script(stall("before ", 2.0, "after"))
    with pytest.raises(socket.timeout):
        post(fake.url, request_body(), timeout=0.5)  # a client with a read timeout gives up


def test_stall_before_headers_withholds_the_status_line(fake):
    fake.script(stall(seconds=0.5, before_headers=True))
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port_of(fake.url), timeout=5)
    conn.request("POST", "/v1/messages", json.dumps(request_body()), GOOD_HEADERS)
    response = conn.getresponse()
    assert time.monotonic() - started >= 0.5 and response.status == 200
    response.read()
    conn.close()


def test_stop_cuts_a_stall_short():
    fake = FakeAnthropic()
    fake.start()
    fake.script(stall("x", 60.0))
    worker = threading.Thread(target=post, args=(fake.url, request_body()), kwargs={"timeout": 30})
    worker.start()
    fake.wait_requests(1)
    started = time.monotonic()
    fake.stop()
    worker.join(10)
    assert not worker.is_alive() and time.monotonic() - started < 5


def naive_events(data):
    """What a parser that only knows `data: ` + one JSON line sees."""
    return [json.loads(line[6:]) for line in data.decode().split("\n")
            if line.startswith("data: ")]


def test_garbage_is_legal_sse_a_naive_parser_chokes_on(fake):
    fake.script(garbage("all of this text must survive", chunk=4))
    status, _, data, _ = post(fake.url, request_body())
    wire = data.decode()
    assert status == 200
    assert "\n: keepalive\n" in "\n" + wire
    assert "event: future_thing\n" in wire and "\ndata:{" in wire
    assert ',\ndata: "delta":' in wire  # one JSON object split over two data lines
    events = decoded(data)
    assert streamed_text(events) == "all of this text must survive"
    assert "future_thing" in [n for n, _ in events] and events[-1][0] == "message_stop"
    with pytest.raises(ValueError):
        naive_events(data)


def test_long_line_is_one_data_line_of_n_bytes(fake):
    fake.script(long_line(20000))
    _, _, data, _ = post(fake.url, request_body())
    lengths = [len(line) for line in data.split(b"\n") if b"text_delta" in line]
    assert lengths == [20000]
    events = decoded(data)
    assert streamed_text(events) == "x" * len(streamed_text(events))
    assert events[-1][0] == "message_stop"
    with pytest.raises(ValueError):
        long_line(10)


def test_script_only_takes_replies(fake):
    with pytest.raises(TypeError):
        fake.script("just a string")


# ---- prompt caching ----

def cached_system(words):
    return [{"type": "text", "text": words, "cache_control": {"type": "ephemeral"}}]


def usage_of(fake, **extra):
    _, _, data, _ = post(fake.url, request_body(**extra))
    return decoded(data)[0][1]["message"]["usage"]


def test_identical_cached_prefix_is_read_a_changed_one_is_written(fake):
    system = cached_system("You are Mimi. " * 50)
    first = usage_of(fake, system=system)
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    second = usage_of(fake, system=system)
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    assert second["input_tokens"] < first["cache_creation_input_tokens"]
    clock = usage_of(fake, system=cached_system("You are Mimi. " * 50 + "It is 10:01."))
    assert clock["cache_creation_input_tokens"] > 0 and clock["cache_read_input_tokens"] == 0
    tools = [{"name": "t", "input_schema": {"type": "object"}}]
    assert usage_of(fake, system=system, tools=tools)["cache_read_input_tokens"] == 0
    assert usage_of(fake, system=system, tools=tools)["cache_read_input_tokens"] > 0


def test_no_cache_control_means_no_cache_figures(fake):
    for _ in range(2):
        usage = usage_of(fake, system="You are Mimi. " * 50)
        assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0
        assert usage["input_tokens"] > 100


def test_cache_control_on_tools_alone_counts(fake):
    tools = [{"name": "t", "input_schema": {"type": "object"},
              "cache_control": {"type": "ephemeral"}}]
    assert usage_of(fake, tools=tools)["cache_creation_input_tokens"] > 0
    assert usage_of(fake, tools=tools)["cache_read_input_tokens"] > 0


def test_scripted_usage_replaces_the_approximation_streamed_and_whole(fake):
    figures = {"input_tokens": 900, "output_tokens": 123, "cache_read_input_tokens": 40}
    fake.script(text("Counted.", usage=figures), text("Again.", usage=figures))
    _, _, data, _ = post(fake.url, request_body())
    events = decoded(data)
    start = events[0][1]["message"]["usage"]
    assert (start["input_tokens"], start["cache_read_input_tokens"], start["cache_creation_input_tokens"]) == (
        900, 40, 0)
    assert [d["usage"]["output_tokens"] for n, d in events if n == "message_delta"] == [123]
    _, _, body, _ = post(fake.url, request_body(stream=False))
    usage = json.loads(body)["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_input_tokens"]) == (900, 123, 40)


# ---- recording, threads, TLS, command line ----

def test_every_request_is_recorded_rejected_ones_too(fake):
    before = time.time()
    post(fake.url, request_body("one"))
    post(fake.url, request_body(), {"x-api-key": "wrong"})
    post(fake.url, "not json at all")
    records = fake.requests
    assert [r["status"] for r in records] == [200, 401, 400]
    assert all(r["path"] == "/v1/messages" and r["method"] == "POST" for r in records)
    assert records[0]["body"]["messages"][0]["content"] == "one"
    assert records[1]["headers"]["x-api-key"] == "wrong"
    assert records[1]["headers"]["anthropic-version"] == "2023-06-01"
    assert records[2]["body"] == "not json at all"
    assert before <= records[0]["time"] <= records[2]["time"] <= time.time()
    fake.reset()
    assert fake.requests == [] and fake.pending == 0


def test_concurrent_requests_each_take_one_scripted_reply(fake):
    fake.script(*[text("reply {}".format(i)) for i in range(20)])
    answers = []

    def one():
        _, _, data, _ = post(fake.url, request_body())
        answers.append(streamed_text(decoded(data)))

    workers = [threading.Thread(target=one) for _ in range(20)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert sorted(answers) == sorted("reply {}".format(i) for i in range(20))
    assert len(fake.requests) == 20 and fake.pending == 0


def test_tls_mode_serves_https_with_a_verifiable_certificate(tmp_path):
    paths = make_test_ca(tmp_path)
    with FakeAnthropic(ssl_context=server_context(paths)) as fake:
        assert fake.url.startswith("https://localhost:")
        trusting = ssl.create_default_context(cafile=paths["ca.pem"])
        status, _, data, complete = post(fake.url, request_body("over tls"), context=trusting)
        assert (status, complete) == (200, True)
        assert streamed_text(decoded(data)) == "You said: over tls"
        with pytest.raises(ssl.SSLCertVerificationError):
            post(fake.url, request_body(), context=ssl.create_default_context())


def test_command_line_runs_in_the_foreground_and_announces_its_url():
    process = subprocess.Popen(
        [sys.executable, "-m", "host_sim.fake_anthropic", "--port", "0", "--api-key", "k2",
         "--delay", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline().strip()
        assert line.startswith("fake Anthropic API on http://127.0.0.1:")
        url = line.rsplit(" ", 1)[1]
        assert post(url, request_body())[0] == 401  # the test key is not k2
        status, _, data, _ = post(url, request_body("cli"), {"x-api-key": "k2"})
        assert status == 200 and streamed_text(decoded(data)) == "You said: cli"
    finally:
        process.terminate()
        assert process.wait(10) == 0


# ---- text: valid UTF-8 in, raw or escaped out ----

def test_a_body_that_is_not_utf8_is_a_400_invalid_request(fake):
    fake.script(text("never sent"))
    body = json.dumps(request_body("pizza PLACEHOLDER")).encode().replace(
        b"PLACEHOLDER", b"\xed\xa0\xbc\xed\xbd\x95")  # what MicroPython's json made of an escaped pair
    for payload in (body, json.dumps(request_body("half \ud83c")).encode()):
        status, _, data, _ = post(fake.url, payload)
        assert status == 400
        assert error_body(data)[0] == "invalid_request_error"
    assert fake.pending == 1


def test_replies_stream_raw_utf8_or_escaped_and_both_decode_to_the_same_text(fake):
    said = "pizza \U0001f355, flag \U0001f1f5\U0001f1f9, \u4f60\u597d"
    fake.script(text(said, chunk=3))
    status, _, raw, _ = post(fake.url, request_body())
    assert status == 200 and "\U0001f355".encode() in raw
    fake.escape_non_ascii = True
    fake.script(text(said, chunk=3))
    status, _, escaped, _ = post(fake.url, request_body())
    assert status == 200 and escaped.isascii() and b"\\ud83c\\udf55" in escaped
    assert streamed_text(decoded(raw)) == streamed_text(decoded(escaped)) == said


# ---- the tool search tool (issue 44) ----

SEARCH_TOOL = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
SEARCH_BETA = {"anthropic-beta": "advanced-tool-use-2025-11-20"}


def _tool(name, **extra):
    return dict({"name": name, "description": "the {} tool. ".format(name) * 20, "input_schema": {"type": "object"}},
                **extra)


@pytest.mark.parametrize("tools,headers,words", [
    ([_tool("a"), _tool("b", defer_loading=True)], SEARCH_BETA, "require a tool search tool"),
    ([_tool("a"), dict(SEARCH_TOOL, defer_loading=True), _tool("b", defer_loading=True)], SEARCH_BETA,
     "cannot have defer_loading"),
    ([_tool("a"), SEARCH_TOOL, _tool("b", defer_loading=True)], None, "does not match any of the expected tags"),
    ([_tool("a"), _tool("b", defer_loading=True)], None, "defer_loading: Extra inputs are not permitted"),
    ([_tool("a"), SEARCH_TOOL, _tool("b", defer_loading="yes")], SEARCH_BETA, "valid boolean"),
])
def test_the_tool_search_tool_s_shape_is_checked_as_the_api_does(fake, tools, headers, words):
    status, _, data, _ = post(fake.url, request_body(tools=tools), headers)
    assert status == 400 and error_body(data)[0] == "invalid_request_error" and words in error_body(data)[1]
    if headers is not None:
        status, _, _, _ = post(fake.url, request_body(tools=tools))  # without the beta the tool itself is unknown
        assert status == 400


def test_deferred_tools_are_billed_once_a_search_found_them_and_the_search_is_replayed(fake):
    tools = [_tool("a"), SEARCH_TOOL] + [_tool("t{}".format(i), defer_loading=True) for i in range(10)]
    status, _, data, _ = post(fake.url, request_body(tools=tools), SEARCH_BETA)
    deferred = decoded(data)[0][1]["message"]["usage"]["input_tokens"]
    everything = usage_of(fake, tools=[_tool("a")] + [_tool("t{}".format(i)) for i in range(10)])["input_tokens"]
    assert status == 200 and deferred * 4 < everything  # ten definitions sent, not billed
    found = fake_anthropic_tool_search()
    body = request_body(tools=tools)
    body["messages"] += [{"role": "assistant", "content": found}, {"role": "user", "content": "and?"}]
    status, _, data, _ = post(fake.url, body, SEARCH_BETA)
    assert status == 200  # the search's blocks replayed as they came
    billed = decoded(data)[0][1]["message"]["usage"]["input_tokens"]
    assert billed > deferred + 100  # t3's definition entered the context


def fake_anthropic_tool_search():
    from host_sim.fake_anthropic import tool_search

    reply = tool_search("the third", ["t3"])
    return reply.blocks
