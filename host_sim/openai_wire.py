# Scripted replies of the fake OpenAI-compatible server: the chat.completion.chunk events they stream, shaped as
# each real server shapes them (OpenAI, Ollama, llama.cpp's server, OpenRouter, DeepSeek), faults included.
import json
import secrets
import time

from host_sim.sse_replies import CUT, SLEEP, WRITE, approx_tokens

SERVERS = ("openai", "ollama", "llamacpp", "openrouter", "deepseek")
DEFAULT_CHUNK = 8
DONE = b"data: [DONE]\n\n"
OPENROUTER_COMMENT = b": OPENROUTER PROCESSING\n\n"
ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "permission_denied",
               404: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error", 502: "server_error",
               503: "server_error", 529: "server_error"}


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def call_id(server):
    """A tool call id shaped like the server's own."""
    if server == "ollama":
        return "call_" + secrets.token_hex(4)
    return "call_" + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y")[:24]


def _pieces(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)]


class ChatReply:
    """One answer: text and tool calls streamed in chunks, maybe with reasoning first, maybe with a fault."""

    def __init__(self, text="", calls=(), finish=None, reasoning="", chunk=DEFAULT_CHUNK, delay=0.0, usage=True):
        self.text = text
        self.calls = [dict(name=name, input=data, id=None) for name, data in calls]
        self.finish = finish or ("tool_calls" if self.calls else "stop")
        self.reasoning = reasoning  # streamed as the server streams its thinking (never the answer)
        self.chunk, self.delay = chunk, delay
        self.usage = usage  # False: the server sends no usage, even when asked (it ignores stream_options)
        self.fault = None  # None, "stream_error", "cut", "stall"
        self.text_before = ""  # a fault strikes after this much of the text
        self.error = None  # the stream error's {"message", "code"}
        self.stall_seconds = 0.0

    def __repr__(self):
        return "<ChatReply {} calls={} fault={}>".format(self.finish, [c["name"] for c in self.calls], self.fault)

    def completion_tokens(self):
        n = approx_tokens(self.text) if self.text else 0
        for call in self.calls:
            n += approx_tokens(dumps(call["input"]))
        return max(1, n)

    def steps(self, server, model, prompt_tokens, include_usage):
        """The stream as steps (WRITE bytes, SLEEP seconds, CUT) for this server's way of streaming."""
        base = {"id": "chatcmpl-" + secrets.token_hex(12), "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        if server == "ollama":
            base["system_fingerprint"] = "fp_ollama"
        elif server == "openai":
            base["system_fingerprint"] = "fp_" + secrets.token_hex(5)

        def chunk(delta, finish=None, **extra):
            event = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])
            if server == "openai":
                event["choices"][0]["logprobs"] = None
            event.update(extra)
            return WRITE, "data: {}\n\n".format(dumps(event)).encode()

        if server == "openrouter":
            yield WRITE, OPENROUTER_COMMENT
        first = {"role": "assistant", "content": ""}
        if server == "openai":
            first["refusal"] = None
        if server != "ollama":  # Ollama's first chunk carries text already
            yield chunk(first)
        for piece in _pieces(self.reasoning, self.chunk):
            yield chunk({"role": "assistant", "content": None, "reasoning_content": piece} if server == "deepseek"
                        else {"role": "assistant", "content": "", "reasoning": piece})
            if server == "openrouter":
                yield WRITE, OPENROUTER_COMMENT
        text = self.text
        if self.fault:
            text = self.text_before
        pieces = _pieces(text, self.chunk)
        for i, piece in enumerate(pieces):
            delta = {"role": "assistant", "content": piece} if server == "ollama" else {"content": piece}
            last = i == len(pieces) - 1 and not self.calls and not self.fault
            if server == "ollama" and last:  # Ollama ends a text reply in its last text chunk
                yield chunk(delta, self.finish)
            else:
                yield chunk(delta)
            if self.delay:
                yield SLEEP, self.delay
        if self.fault:
            yield from self._fault(server, chunk)
            if self.fault != "stall":
                return
            for piece in _pieces(self.text[len(self.text_before):], self.chunk):
                yield chunk({"content": piece})
        for index, call in enumerate(self.calls):
            call["id"] = call["id"] or call_id(server)
            arguments = dumps(call["input"])
            if server == "ollama":  # each call whole, in one chunk
                yield chunk({"role": "assistant", "content": "", "tool_calls": [{
                    "id": call["id"], "index": index, "type": "function",
                    "function": {"name": call["name"], "arguments": arguments}}]})
                continue
            yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                         "function": {"name": call["name"], "arguments": ""}}]})
            for piece in _pieces(arguments, self.chunk):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        usage = None
        if self.usage and (include_usage or server == "llamacpp"):
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": self.completion_tokens(),
                     "total_tokens": prompt_tokens + self.completion_tokens()}
            if server in ("openai", "deepseek"):
                usage["prompt_tokens_details"] = {"cached_tokens": 0}
        if server == "ollama" and not self.calls and pieces:
            pass  # its finish_reason came with the last text
        elif server == "llamacpp" and usage is not None:  # llama.cpp: usage (and timings) in the finishing chunk
            yield chunk({}, self.finish, usage=usage, timings={"predicted_n": usage["completion_tokens"]})
            usage = None
        else:
            yield chunk({"role": "assistant", "content": ""} if server == "ollama" else {}, self.finish)
        if usage is not None:  # a last chunk without choices
            yield WRITE, "data: {}\n\n".format(dumps(dict(base, choices=[], usage=usage))).encode()
        yield WRITE, DONE

    def _fault(self, server, chunk):
        if self.fault == "cut":
            yield CUT, None
        elif self.fault == "stall":
            yield SLEEP, self.stall_seconds
        elif self.fault == "stream_error":  # as OpenRouter sends one: an error object, finish_reason "error"
            yield chunk({"content": ""}, "error", error=self.error)
            yield WRITE, DONE


class ChatError:
    """An HTTP error answer: {"error": {"message", "type", "param", "code"}}."""

    def __init__(self, status, message, kind=None, code=None, retry_after=None, param=None):
        self.status, self.message = status, message
        self.kind = kind or ERROR_TYPES.get(status, "server_error")
        self.code, self.retry_after, self.param = code, retry_after, param

    def body(self):
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


# ---- the scripting vocabulary ----

def text(reply, chunk=DEFAULT_CHUNK, delay=0.0, finish="stop", reasoning="", usage=True):
    return ChatReply(reply, finish=finish, reasoning=reasoning, chunk=chunk, delay=delay, usage=usage)


def tool_calls(*calls, text="", chunk=DEFAULT_CHUNK, usage=True):
    """calls: (name, input dict) each; all in one reply (finish_reason tool_calls)."""
    return ChatReply(text, calls, chunk=chunk, usage=usage)


def error(status, message=None, kind=None, code=None, retry_after=None, param=None):
    return ChatError(status, message or "The server had an error while processing your request.", kind, code,
                     retry_after, param)


def stream_error(text_before, message="Provider returned error", code=502, chunk=DEFAULT_CHUNK):
    reply = ChatReply(text_before, chunk=chunk)
    reply.fault, reply.text_before, reply.error = "stream_error", text_before, {"code": code, "message": message}
    return reply


def cut(text_before, chunk=DEFAULT_CHUNK):
    reply = ChatReply(text_before + " and more", chunk=chunk)
    reply.fault, reply.text_before = "cut", text_before
    return reply
