# OpenAI-compatible Chat Completions over SSE (OpenAI, OpenRouter, DeepSeek, Groq, Ollama, llama.cpp, LM Studio):
# the same HTTP client, TLS checks, SSE parser, retries and bounds as the Claude client. Loaded only by a board
# that uses an openai profile (llm/models.py).
from mimi.llm.errors import ERROR_BODY_MAX, ModelError, from_response, from_stream_error
from mimi.llm.openai_request import ChatBody, messages_of, tools_of
from mimi.llm.openai_stream import ChatAssembler
from mimi.llm.profiles import host_of
from mimi.llm.retry import retried
from mimi.llm.sse import SSE_LINE_MAX, SSEParser
from mimi.llm.stream import StreamError
from mimi.net import http

PATH = "/chat/completions"
MAX_TOKENS, MAX_COMPLETION_TOKENS = "max_tokens", "max_completion_tokens"
# OpenAI's own API takes max_completion_tokens for every model (its reasoning models refuse max_tokens); most
# other servers know only max_tokens. A server that refuses max_tokens naming the other is asked again with it.
_COMPLETION_HOSTS = ("api.openai.com",)
_TLS_HINT = "For a server with its own certificate, put its CA certificate (DER) in the certs folder on flash"


def url_of(base):
    """<base>/chat/completions; a URL already ending in it is taken as it is."""
    base = base.rstrip("/")
    return base if base.endswith(PATH) else base + PATH


class OpenAIChat:
    """stream() as Claude.stream(), for one openai profile (llm/profiles.py), made for the call by the Models,
    whose limits it keeps to (the host runner's --limits shortens them) and which remember the max tokens field
    a server refused."""

    def __init__(self, models):
        self.models = models
        self.config = models.config
        self.tokens_field = models.tokens_field  # profile name -> the field its server takes, once it refused one

    async def stream(self, profile, system, messages, *, tools=None, on_delta=None, tool_choice=None,
                     max_tokens=None, fail_fast=False):
        url = url_of(profile.url)
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        key = profile.key
        if key:  # local servers take none
            headers["authorization"] = "Bearer " + key
        max_tokens = max_tokens or self.config.get("llm_config", "max_tokens")
        chat, functions = messages_of(system, messages), tools_of(tools)
        field = self.tokens_field.get(profile.name) or (
            MAX_COMPLETION_TOKENS if host_of(url) in _COMPLETION_HOSTS else MAX_TOKENS)

        async def attempt(streamed):
            body = ChatBody(profile.model, chat, functions, max_tokens, field, tool_choice if functions else None)
            return await self._attempt(profile, url, headers, body, on_delta, streamed)

        try:
            return await retried(attempt, profile.name, fail_fast)
        except ModelError as exc:
            if exc.status != 400 or field != MAX_TOKENS or MAX_COMPLETION_TOKENS not in exc.message:
                raise
        field = self.tokens_field[profile.name] = MAX_COMPLETION_TOKENS
        return await retried(attempt, profile.name, fail_fast)

    async def _attempt(self, profile, url, headers, body, on_delta, streamed):
        name = profile.name
        try:
            limits = self.models
            response = await http.request("POST", url, headers, body, limits.idle_s, limits.first_byte_s,
                                          limits.deadline_s)
        except http.TLSError as exc:
            raise ModelError("tls", "Cannot reach model profile {}: {}. {}".format(name, exc, _TLS_HINT))
        except http.HTTPError as exc:
            raise ModelError("network", "Cannot reach model profile {}: {}".format(name, exc), retryable=True)
        try:
            if response.status != 200:
                raw = await response.read(ERROR_BODY_MAX)
                raise from_response(response.status, response.headers, raw, profile.model, name,
                                    self.models.secrets())
            parser = SSEParser()
            assembler = ChatAssembler()
            while not assembler.done:
                line = await response.readline(SSE_LINE_MAX)
                if line is None:
                    if assembler.finish is not None:  # a server that ends without [DONE]
                        break
                    raise ModelError("cut", "The connection to {} broke before the reply was complete (the stream "
                                     "ended early).".format(name), True)
                event = parser.feed(line)
                if event is None:
                    continue
                delta = assembler.handle(event[0], event[1])
                if delta:
                    streamed[0] = True
                    if on_delta:
                        await on_delta(delta)
            assembler.finished(response.sent)
            return assembler
        except StreamError as exc:
            raise from_stream_error(exc, name, self.models.secrets())
        except http.LineTooLong as exc:
            raise ModelError("bad_stream", "{}'s reply could not be read: {}".format(name, exc), True)
        except http.HTTPError as exc:
            raise ModelError("cut", "The connection to {} broke before the reply was complete ({}).".format(
                name, exc), True)
        except ValueError as exc:
            raise ModelError("bad_stream", "{}'s reply could not be read: {}".format(name, exc))
        except MemoryError:
            raise ModelError("memory", "{}'s reply could not be read: one of its events does not fit in this "
                             "board's memory".format(name))
        finally:
            await response.aclose()
