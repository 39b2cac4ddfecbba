# The fake OpenAI-compatible server against the official `openai` SDK: every server's stream assembles, in the
# SDK's own streaming client, into the reply that was scripted; and the fake refuses what the real APIs refuse.
import json
import os
import sys

import openai
import pytest

from host_sim.fake_openai import SERVERS, FakeOpenAI, check_body, error, stream_error, text, tool_calls
from host_sim.sse_replies import WRITE

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in ("firmware", "host_sim/standins"):
    if os.path.join(_ROOT, _p) not in sys.path:
        sys.path.insert(0, os.path.join(_ROOT, _p))

from mimi.llm.file_pieces import TextPieces  # noqa: E402
from mimi.llm.openai_request import ChatBody, messages_of, tools_of  # noqa: E402
from mimi.llm.openai_stream import ChatAssembler  # noqa: E402
from mimi.llm.sse import SSEParser  # noqa: E402

KEY = "sk-test-openai-key"
TOOLS = [{"type": "function", "function": {"name": "get_time", "description": "the time",
                                           "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}]


@pytest.fixture(params=SERVERS)
def fake(request):
    server = FakeOpenAI(request.param, api_key=KEY, chunk=3)
    server.start()
    yield server
    server.stop()


def _client(fake):
    return openai.OpenAI(api_key=KEY, base_url=fake.base, max_retries=0)


def _final(fake, messages, **options):
    options.setdefault("max_tokens", 100)
    with _client(fake).chat.completions.stream(model="m-1", messages=messages, stream_options={"include_usage": True},
                                               **options) as stream:
        return stream.get_final_completion()


def test_a_text_reply_assembles_in_the_sdk(fake):
    fake.script(text("Hello there, how are you doing today?", reasoning="let me think about it"))
    done = _final(fake, [{"role": "user", "content": "hi"}])
    message = done.choices[0].message
    assert message.content == "Hello there, how are you doing today?"  # the reasoning is not the answer
    assert done.choices[0].finish_reason == "stop"
    assert done.usage.completion_tokens > 0 and done.usage.prompt_tokens > 0


def test_two_tool_calls_in_one_reply_assemble_in_the_sdk(fake):
    fake.script(tool_calls(("get_time", {"tz": "UTC"}), ("get_time", {"tz": "Europe/Lisbon"}), text="Checking."))
    done = _final(fake, [{"role": "user", "content": "time?"}], tools=TOOLS)
    message = done.choices[0].message
    assert [json.loads(c.function.arguments) for c in message.tool_calls] == [{"tz": "UTC"}, {"tz": "Europe/Lisbon"}]
    assert [c.function.name for c in message.tool_calls] == ["get_time", "get_time"]
    assert len({c.id for c in message.tool_calls}) == 2 and message.content == "Checking."
    assert done.choices[0].finish_reason == "tool_calls"


def test_a_length_cut_and_no_usage_as_the_sdk_reads_them(fake):
    fake.script(text("cut short", finish="length", usage=False))
    with pytest.raises(openai.LengthFinishReasonError) as caught:  # the SDK's helper says so, with the reply
        _final(fake, [{"role": "user", "content": "go on"}])
    done = caught.value.completion
    assert done.choices[0].finish_reason == "length" and done.choices[0].message.content == "cut short"
    assert done.usage is None


def test_an_http_error_reaches_the_sdk_as_its_status(fake):
    fake.script(error(429, "Rate limit reached", retry_after=7))
    with pytest.raises(openai.RateLimitError) as caught:
        _final(fake, [{"role": "user", "content": "hi"}])
    assert "Rate limit reached" in str(caught.value)


def test_openrouters_error_inside_the_stream_reaches_the_sdk():
    with FakeOpenAI("openrouter", api_key=KEY) as fake:
        fake.script(stream_error("partial ", "Provider returned error"))
        with pytest.raises(openai.APIError) as caught:
            _final(fake, [{"role": "user", "content": "hi"}])
        assert "Provider returned error" in str(caught.value)


@pytest.mark.parametrize("messages, said", [
    ([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
      {"role": "user", "content": "hi"}], "did not have response messages: call_1"),
    ([{"role": "tool", "tool_call_id": "call_9", "content": "x"}], "must be a response to a preceeding message"),
    ([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "get_time", "arguments": {"tz": 1}}}]},
      {"role": "tool", "tool_call_id": "c", "content": "x"}], "arguments': expected a string"),
    ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}], "Supported values"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,@@"}}]}],
     "Invalid base64"),
])
def test_the_fake_refuses_a_request_the_real_api_refuses(messages, said):
    with FakeOpenAI("openai", api_key=KEY) as fake:
        with pytest.raises(openai.BadRequestError) as caught:
            _final(fake, messages, tools=TOOLS)
        assert said in str(caught.value)


def test_reasoning_models_refuse_max_tokens_and_take_max_completion_tokens():
    with FakeOpenAI("openai", api_key=KEY) as fake:
        with pytest.raises(openai.BadRequestError) as caught:
            with _client(fake).chat.completions.stream(model="o3-mini", messages=[{"role": "user", "content": "a"}],
                                                       max_tokens=5) as stream:
                stream.get_final_completion()
        assert "Use 'max_completion_tokens' instead" in str(caught.value)
        with _client(fake).chat.completions.stream(model="o3-mini", messages=[{"role": "user", "content": "a"}],
                                                   max_completion_tokens=5) as stream:
            assert stream.get_final_completion().choices[0].message.content == "You said: a"


def test_a_schema_that_is_not_an_object_and_a_wrong_key_are_refused():
    with FakeOpenAI("openai", api_key=KEY) as fake:
        bad = [{"type": "function", "function": {"name": "t", "parameters": {"type": "string"}}}]
        with pytest.raises(openai.BadRequestError):
            _final(fake, [{"role": "user", "content": "a"}], tools=bad)
        with pytest.raises(openai.AuthenticationError):
            with openai.OpenAI(api_key="wrong", base_url=fake.base, max_retries=0).chat.completions.stream(
                    model="m", messages=[{"role": "user", "content": "a"}], max_tokens=5) as stream:
                stream.get_final_completion()


def test_deepseek_refuses_reasoning_content_sent_back():
    with FakeOpenAI("deepseek", api_key=KEY) as fake:
        with pytest.raises(openai.BadRequestError) as caught:
            _final(fake, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b",
                                                             "reasoning_content": "thinking"},
                          {"role": "user", "content": "c"}])
        assert "reasoning_content" in str(caught.value)


@pytest.mark.parametrize("server", SERVERS)
def test_the_firmwares_assembler_reads_every_servers_stream_as_the_sdk_does(server):
    """The same scripted reply, streamed by the fake as that server does, through the SDK and the firmware."""
    reply = tool_calls(("get_time", {"tz": "UTC"}), ("get_time", {"tz": "Asia/Tokyo \u65e5"}), text="Let me see.",
                       chunk=4)
    reply.reasoning = "thinking first"
    with FakeOpenAI(server, api_key=KEY) as fake:
        fake.script(reply)
        done = _final(fake, [{"role": "user", "content": "time?"}], tools=TOOLS)
    sdk = done.choices[0].message
    parser, assembler, shown = SSEParser(), ChatAssembler(), []
    raw = b"".join(value for step, value in reply.steps(server, "m-1", 10, True) if step == WRITE)
    for line in raw.decode().split("\n"):
        event = parser.feed(line)
        if event is not None:
            delta = assembler.handle(*event)
            shown.append(delta or "")
    assembler.finished(100)
    assert "".join(shown) == sdk.content == assembler.text
    assert [(c["id"], c["name"], c["input"]) for c in assembler.tool_calls] == [
        (c.id, c.function.name, json.loads(c.function.arguments)) for c in sdk.tool_calls]
    assert assembler.stop_reason == "tool_use" and done.choices[0].finish_reason == "tool_calls"
    assert assembler.usage["output_tokens"] == done.usage.completion_tokens and not assembler.estimated


def test_the_firmwares_request_passes_the_fakes_checks():
    """A tool round written by the firmware's request writer is a request the real API takes."""
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": TextPieces(["Look", "ing."])},
                                                  {"type": "tool_use", "id": "call_1", "name": "get_time", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "noon",
                                              "is_error": False}]}]
    tools = [{"name": "get_time", "description": "the time", "input_schema": {"type": "object", "properties": {}}}]
    body = ChatBody("gpt-4o-mini", messages_of("You are Mimi.", messages), tools_of(tools), 100, "max_tokens", "none")
    raw = b"".join(bytes(piece) if not hasattr(piece, "chunks") else b"".join(piece.chunks())
                   for piece in body.pieces())
    checked = check_body(raw, "openai")
    assert [m["role"] for m in checked["messages"]] == ["system", "user", "assistant", "tool"]


def test_llamacpp_refuses_a_prompt_over_its_window_as_the_sdk_sees_it():
    with FakeOpenAI("llamacpp", window=600) as server:
        said = [{"role": "system", "content": "You are Mimi."}, {"role": "user", "content": "word " * 400}]
        with pytest.raises(openai.BadRequestError) as refused:
            _final(server, said)
        assert refused.value.status_code == 400
        body = refused.value.body if "error" not in refused.value.body else refused.value.body["error"]
        assert body["type"] == "exceed_context_size_error" and body["n_ctx"] == 600
        assert body["n_prompt_tokens"] == server.requests[-1]["prompt_tokens"] > 500
        assert "exceeds the available context size (600 tokens)" in body["message"]
        assert _final(server, said[:1] + [{"role": "user", "content": "hi"}]).choices[0].message.content


def test_ollama_silently_cuts_a_prompt_over_its_window_from_the_front():
    with FakeOpenAI("ollama", window=300) as server:
        said = [{"role": "system", "content": "You are Mimi. " * 20}, {"role": "user", "content": "old " * 300},
                {"role": "assistant", "content": "ok"}, {"role": "user", "content": "the newest question"}]
        done = _final(server, said)
        assert done.choices[0].message.content == "You said: the newest question"  # no error at all
        assert server.requests[-1]["lost"] == ["user"]  # the oldest message dropped; only the fake's record says so
        said[1]["content"] = "old " * 2000
        _final(server, said[:2] + [{"role": "user", "content": "again " * 400}])
        assert "system" in server.requests[-1]["lost"]  # the instructions went: the model no longer knows them
