# A fake OpenAI-compatible Chat Completions server (streaming, request checks as the real APIs make them, the
# quirks of OpenAI, Ollama, llama.cpp's server, OpenRouter and DeepSeek, their context windows, scripted faults)
# for tests and benches.
import argparse
import base64
import json
import re
import threading
import time
from collections import deque

from aiohttp import web

from host_sim.background_server import BackgroundServer, drop_connection
from host_sim.openai_wire import (  # noqa: F401  (re-exported: the scripting vocabulary)
    SERVERS, ChatError, ChatReply, cut, dumps, error, stream_error, text, tool_calls)
from host_sim.sse_replies import CUT, WRITE, approx_tokens

MAX_BODY_BYTES = 32 * 1024 * 1024
_ROLES = ("system", "developer", "user", "assistant", "tool")
_USER_PARTS = ("text", "image_url", "input_audio", "file")
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_TOOL_CHOICES = ("none", "auto", "required")
# OpenAI's reasoning models refuse max_tokens (they take max_completion_tokens)
_REASONING_MODELS = ("o1", "o3", "o4", "gpt-5")
# What the real APIs take at the top level; anything else is refused as OpenAI refuses it
_KNOWN_FIELDS = ("model", "messages", "stream", "stream_options", "tools", "tool_choice", "max_tokens",
                 "max_completion_tokens", "temperature", "top_p", "n", "stop", "presence_penalty",
                 "frequency_penalty", "seed", "user", "response_format", "parallel_tool_calls", "logprobs",
                 "top_logprobs", "reasoning_effort", "metadata", "store", "service_tier", "modalities")


class Invalid(Exception):
    def __init__(self, status, message, param=None, code=None, extra=None):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.extra = extra  # llama.cpp's window refusal: its type and counts


def _bad(message, param=None, code=None):
    return Invalid(400, message, param, code)


def check_body(raw, server="openai", known_models=None):
    """The parsed body, or Invalid as the server would answer it."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad("We could not parse the JSON body of your request.")
    if not isinstance(body, dict):
        raise _bad("The request body must be a JSON object.")
    for field in body:
        if field not in _KNOWN_FIELDS:
            raise _bad("Unrecognized request argument supplied: {}".format(field), field)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _bad("you must provide a model parameter", "model")
    if known_models is not None and model not in known_models:
        raise Invalid(404, "The model `{}` does not exist or you do not have access to it.".format(model),
                      None, "model_not_found")
    _check_tokens(body, server)
    if body.get("stream") is not True:
        raise _bad("this fake streams only: set stream to true", "stream")
    options = body.get("stream_options")
    if options is not None and (not isinstance(options, dict) or not isinstance(options.get("include_usage"), bool)):
        raise _bad("Invalid type for 'stream_options.include_usage': expected a boolean.", "stream_options")
    names = _check_tools(body)
    _check_messages(body.get("messages"), server, names)
    return body


def _check_tokens(body, server):
    given = [f for f in ("max_tokens", "max_completion_tokens") if f in body]
    if len(given) != 1:
        raise _bad("give one of max_tokens or max_completion_tokens (this fake insists on a bound)", "max_tokens")
    value = body[given[0]]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _bad("Invalid '{}': integer below minimum value.".format(given[0]), given[0])
    if given[0] == "max_tokens" and server == "openai" and body["model"].startswith(_REASONING_MODELS):
        raise _bad("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                   "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")


def _check_tools(body):
    tools = body.get("tools")
    if tools is None:
        if "tool_choice" in body:
            raise _bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
                       "tool_choice")
        return set()
    if not isinstance(tools, list) or not tools:
        raise _bad("Invalid 'tools': empty array. Expected an array with minimum length 1.", "tools")
    names = set()
    for i, tool in enumerate(tools):
        where = "tools[{}]".format(i)
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            raise _bad("Invalid '{}': expected an object of type 'function'.".format(where), where)
        function = tool["function"]
        for key in function:
            if key not in ("name", "description", "parameters", "strict"):
                raise _bad("Unrecognized field '{}' in {}.function".format(key, where), where)
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise _bad("Invalid '{}.function.name': string does not match pattern.".format(where), where)
        if name in names:
            raise _bad("Duplicate function name: {}".format(name), where)
        names.add(name)
        if "description" in function and not isinstance(function["description"], str):
            raise _bad("Invalid '{}.function.description': expected a string.".format(where), where)
        schema = function.get("parameters")
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            raise _bad("Invalid schema for function '{}': schema must be a JSON Schema of 'type: \"object\"'."
                       .format(name), where, "invalid_function_parameters")
    choice = body.get("tool_choice")
    if choice is not None and choice not in _TOOL_CHOICES and not (
            isinstance(choice, dict) and choice.get("type") == "function"
            and (choice.get("function") or {}).get("name") in names):
        raise _bad("Invalid value for 'tool_choice'.", "tool_choice")
    return names


def _text_parts(content, where, allowed=("text",)):
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not content:
        raise _bad("Invalid '{}.content': expected a string or a non-empty array of parts.".format(where), where)
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in allowed:
            raise _bad("Invalid value: '{}'. Supported values are: {}.".format(kind, ", ".join(allowed)),
                       "{}.content[{}].type".format(where, j))
        if kind == "text" and not isinstance(part.get("text"), str):
            raise _bad("Missing required parameter: '{}.content[{}].text'.".format(where, j), where)
        if kind == "image_url":
            _check_image(part.get("image_url"), "{}.content[{}]".format(where, j))
        if kind == "file":
            _check_file(part.get("file"), "{}.content[{}]".format(where, j))


def _data_url(url, where, kinds):
    head, _, data = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64") or head[5:-7] not in kinds:
        raise _bad("Invalid data URL in '{}': expected data:<{}>;base64,...".format(where, "|".join(kinds)), where)
    try:
        return base64.b64decode(data, validate=True)
    except ValueError:
        raise _bad("Invalid base64 image data in '{}'.".format(where), where, "invalid_image_format")


def _check_image(image, where):
    url = image.get("url") if isinstance(image, dict) else None
    if not isinstance(url, str):
        raise _bad("Missing required parameter: '{}.image_url.url'.".format(where), where)
    if not url.startswith(("http://", "https://")):
        _data_url(url, where, ("image/jpeg", "image/png", "image/gif", "image/webp"))


def _check_file(file, where):
    if not isinstance(file, dict) or not isinstance(file.get("file_data"), str):
        raise _bad("Missing required parameter: '{}.file.file_data'.".format(where), where)
    _data_url(file["file_data"], where, ("application/pdf",))


def _check_messages(messages, server, names):
    if not isinstance(messages, list) or not messages:
        raise _bad("Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages")
    waiting = []  # tool_call_ids of the last assistant message not yet answered by a tool message
    for i, message in enumerate(messages):
        where = "messages[{}]".format(i)
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise _bad("Invalid '{}.role': expected one of {}.".format(where, ", ".join(_ROLES)), where)
        role = message["role"]
        if server == "deepseek" and "reasoning_content" in message:
            raise _bad("The reasoning_content is an intermediate result for display purposes only and will not "
                       "be included in the context for inference. Please remove the reasoning_content from your "
                       "message to reduce network traffic.", where)
        if waiting and role != "tool":
            raise _bad("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                       "each 'tool_call_id'. The following tool_call_ids did not have response messages: {}"
                       .format(", ".join(waiting)), where)
        if role in ("system", "developer"):
            _text_parts(message.get("content"), where)
        elif role == "user":
            _text_parts(message.get("content"), where, _USER_PARTS)
        elif role == "assistant":
            waiting = _check_assistant(message, where)
        else:
            answered = message.get("tool_call_id")
            if not isinstance(answered, str) or answered not in waiting:
                raise _bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                           "with 'tool_calls'.", where)
            if not isinstance(message.get("content"), (str, list)):
                raise _bad("Invalid '{}.content': expected a string.".format(where), where)
            waiting.remove(answered)
    if waiting:
        raise _bad("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                   "'tool_call_id'. The following tool_call_ids did not have response messages: {}".format(
                       ", ".join(waiting)), "messages")


def _check_assistant(message, where):
    content, calls = message.get("content"), message.get("tool_calls")
    if content is not None:
        _text_parts(content, where)
    if calls is None:
        if content is None:
            raise _bad("Invalid '{}': an assistant message needs content or tool_calls.".format(where), where)
        return []
    if not isinstance(calls, list) or not calls:
        raise _bad("Invalid '{}.tool_calls': empty array.".format(where), where)
    ids = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call.get("id"), str) or call.get("type") != "function" or not isinstance(function, dict) \
                or not isinstance(function.get("name"), str):
            raise _bad("Invalid '{}.tool_calls': each needs an id, type 'function' and a function name."
                       .format(where), where)
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            raise _bad("Invalid '{}.tool_calls[].function.arguments': expected a string.".format(where), where)
        try:
            json.loads(arguments)
        except ValueError:
            raise _bad("Invalid '{}.tool_calls[].function.arguments': not valid JSON.".format(where), where)
        ids.append(call["id"])
    return ids


def heard(messages):
    """What the default brain answers: the last user turn's text (a photo as its type and size), or the results
    of the tool messages it ends with."""
    last = messages[-1]
    if last["role"] == "tool":
        return "Tool result: " + " | ".join(str(m["content"]) for m in reversed(_trailing_tools(messages)))
    content = last.get("content")
    if isinstance(content, list):
        said = []
        for part in content:
            if part.get("type") == "text":
                said.append(part["text"])
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"]
                kind = url[5:url.index(";")]
                said.append("[image {}, {} bytes]".format(kind, len(_data_url(url, "image", (kind,)))))
            else:
                said.append("[{}]".format(part.get("type")))
        content = "\n".join(said)
    return "You said: " + str(content)


def _trailing_tools(messages):
    out = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        out.append(message)
    return out


_IMAGE_TOKENS = 1600  # what a vision model's prompt counts for a photo, whatever its bytes


def prompt_tokens(body):
    """The prompt's tokens as this fake counts them: a token for 4 characters of the messages' and tools' compact
    JSON, a photo 1,600 (a window's check and the usage chunk)."""
    images = 0
    messages = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            kept = [part for part in content if not (isinstance(part, dict) and part.get("type") == "image_url")]
            images += len(content) - len(kept)
            message = dict(message, content=kept)
        messages.append(message)
    return approx_tokens(dumps(messages) + dumps(body.get("tools") or [])) + images * _IMAGE_TOKENS


def _within(body, window):
    """Ollama's way with a prompt over num_ctx: the oldest messages after the system ones dropped until it fits,
    then the input cut, its end kept (the system message goes first): (body as the model sees it, what was lost)."""
    messages = list(body["messages"])
    lost = []
    while prompt_tokens(dict(body, messages=messages)) > window:
        firsts = [i for i, m in enumerate(messages) if m["role"] not in ("system", "developer")]
        if len(firsts) > 1:
            lost.append(messages.pop(firsts[0])["role"])
        elif messages and messages[0]["role"] in ("system", "developer"):
            lost.append(messages.pop(0)["role"])
        else:
            break
    return dict(body, messages=messages), lost


async def _body(request):
    """The whole body (read until its end), or None past MAX_BODY_BYTES."""
    data = bytearray()
    while True:
        piece = await request.content.read(64 * 1024)
        if not piece:
            return bytes(data)
        data += piece
        if len(data) > MAX_BODY_BYTES:
            return None


class ContextError(ChatError):
    """llama.cpp's server refusing a prompt over its window: {"error": {"code": 400, "message", "type":
    "exceed_context_size_error", "n_prompt_tokens", "n_ctx"}}."""

    def __init__(self, message, n_prompt_tokens, n_ctx):
        super().__init__(400, message, "exceed_context_size_error")
        self.counts = (n_prompt_tokens, n_ctx)

    def body(self):
        return {"error": {"code": 400, "message": self.message, "type": self.kind,
                          "n_prompt_tokens": self.counts[0], "n_ctx": self.counts[1]}}


class FakeOpenAI(BackgroundServer):
    """An OpenAI-compatible server on a local port, at <url>/v1/chat/completions: script() replies, read
    `requests`, start()/stop(). server: which real server's stream it speaks (SERVERS)."""

    name = "fake-openai"

    def __init__(self, server="openai", api_key=None, ssl_context=None, host="127.0.0.1", port=0,
                 known_models=None, chunk=8, delay=0.0, prefix="/v1", log_writes=False, brain=None, window=None):
        if server not in SERVERS:
            raise ValueError("server is one of " + ", ".join(SERVERS))
        super().__init__(ssl_context, host, port)
        self.server, self.api_key, self.prefix = server, api_key, prefix
        self.known_models = None if known_models is None else frozenset(known_models)
        self.chunk, self.delay = chunk, delay
        self.log_writes = log_writes  # benchmarks: each request's record gets "writes" [(time, bytes)]
        self.brain = brain  # callable(body) -> reply answering when nothing is scripted (default: echo)
        # The model's context window in tokens (prompt_tokens counts them): llamacpp refuses a prompt that does not
        # fit with its max_tokens (400 exceed_context_size_error); ollama cuts it as Ollama does (_within), saying
        # so only in the request's record ("lost": the roles of the messages it dropped); the others ignore it.
        self.window = window
        self._lock = threading.Lock()
        self._script = deque()
        self._requests = []

    @property
    def base(self):
        """The base URL an OpenAI SDK (and an openai profile) takes."""
        return self.url + self.prefix

    def script(self, *replies):
        for reply in replies:
            if not isinstance(reply, (ChatReply, ChatError)):
                raise TypeError("script() takes replies built by text(), tool_calls(), error()...")
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self):
        with self._lock:
            return len(self._script)

    @property
    def requests(self):
        with self._lock:
            return [dict(r) for r in self._requests]

    def wait_requests(self, count, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            done = [r for r in self.requests if r["status"] is not None]
            if len(done) >= count or time.monotonic() > deadline:
                return done
            time.sleep(0.01)

    def reset(self):
        with self._lock:
            self._script.clear()
            del self._requests[:]

    async def _handle(self, request):
        record = {"method": request.method, "path": request.path, "headers": dict(request.headers), "body": None,
                  "time": time.time(), "status": None}
        with self._lock:
            self._requests.append(record)
        try:
            if request.path != self.prefix + "/chat/completions":
                raise Invalid(404, "Invalid URL ({} {})".format(request.method, request.path))
            if request.method != "POST":
                raise Invalid(405, "Method not allowed")
            if self.api_key is not None and request.headers.get("Authorization") != "Bearer " + self.api_key:
                raise Invalid(401, "Incorrect API key provided.", None, "invalid_api_key")
            raw = await _body(request)
            if raw is None:
                raise Invalid(413, "Request too large.")
            try:
                record["body"] = json.loads(raw)
            except ValueError:
                record["body"] = raw.decode("utf-8", "replace")
            with self._lock:
                record["body_read_at"] = time.time()  # the request's last byte has arrived
            body = check_body(raw, self.server, self.known_models)
            record["prompt_tokens"] = prompt_tokens(body)
            if self.window is not None:
                body = self._windowed(record, body)
        except Invalid as exc:
            if exc.extra is not None:
                return self._error(record, ContextError(exc.message, **exc.extra))
            return self._error(record, ChatError(exc.status, exc.message, code=exc.code, param=exc.param))
        with self._lock:
            reply = self._script.popleft() if self._script else None
        if reply is None:
            reply = self.brain(body) if self.brain else text(heard(body["messages"]), self.chunk, self.delay)
        if isinstance(reply, ChatError):
            return self._error(record, reply)
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        counted = record["prompt_tokens"]
        response = web.StreamResponse(status=200, headers={"content-type": "text/event-stream; charset=utf-8",
                                                           "cache-control": "no-cache"})
        with self._lock:
            record["status"] = 200
        writes = record["writes"] = [] if self.log_writes else None
        try:
            await response.prepare(request)
            for step, value in reply.steps(self.server, body["model"], counted, include):
                if step == WRITE:
                    if writes is not None:
                        writes.append((time.time(), value))
                    await response.write(value)
                elif step == CUT or not await self._sleep(value):
                    await drop_connection(request)
                    break
        except ConnectionError:
            pass
        return response

    def _windowed(self, record, body):
        tokens = record["prompt_tokens"]
        if self.server == "llamacpp":
            wanted = tokens + (body.get("max_tokens") or body.get("max_completion_tokens") or 0)
            if wanted > self.window:
                raise Invalid(400, "request ({} tokens) exceeds the available context size ({} tokens)".format(
                    tokens, self.window), None, 400, {"n_prompt_tokens": tokens, "n_ctx": self.window})
        elif self.server == "ollama":
            body, record["lost"] = _within(body, self.window)
        return body

    def _error(self, record, reply):
        with self._lock:
            record["status"] = reply.status
        headers = {}
        if reply.retry_after is not None:
            headers["retry-after"] = str(reply.retry_after)
        return web.Response(status=reply.status, text=dumps(reply.body()), headers=headers,
                            content_type="application/json")

    def _application(self):
        return web.Application(client_max_size=MAX_BODY_BYTES + 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat server (offline).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--server", default="ollama", choices=SERVERS)
    parser.add_argument("--api-key")
    args = parser.parse_args(argv)
    fake = FakeOpenAI(args.server, args.api_key, host=args.host, port=args.port, delay=0.02)
    fake.serve_forever("fake OpenAI-compatible server ({})".format(args.server))


if __name__ == "__main__":
    main()
