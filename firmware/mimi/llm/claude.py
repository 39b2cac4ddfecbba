# The Anthropic Messages API over SSE: request, retries before the first delta (llm/retry.py), clear errors for the
# user.
import json

from mimi.llm.body import value_pieces
from mimi.llm.errors import ERROR_BODY_MAX, ModelError, from_response, from_stream_error
from mimi.llm.retry import retried
from mimi.llm.sse import SSE_LINE_MAX, SSEParser
from mimi.llm.stream import MessageAssembler, StreamError
from mimi.net import http
from mimi.platform import const

API_VERSION = "2023-06-01"
_SERVER_LINE_MAX = const(65536)  # with Claude's web tools: a search result block arrives as one event line
_TLS_HINT = "For your own endpoint, put its CA certificate (DER) in the certs folder on flash"
_CUT_MESSAGE = "The connection to {} broke before the reply was complete ({})."


class JsonBody:
    """The request body, encoded while it is written: net/http walks pieces() once to count the
    Content-Length and once to send, so the encoded request (system prompt, tools, history: about
    40 KB on the standard flash) is never held whole (BENCHMARKS.md, the heap diet). Byte for byte
    what the list form gave."""

    def __init__(self, system, messages, tools, model, max_tokens, tool_choice=None, mcp_servers=None):
        self.parts = (system, messages, tools, model, max_tokens, tool_choice, mcp_servers)

    def pieces(self):
        system, messages, tools, model, max_tokens, tool_choice, mcp_servers = self.parts
        yield b'{"model": ' + json.dumps(model).encode() + b', "max_tokens": ' + str(max_tokens).encode()
        yield b', "stream": true, "system": '
        yield from value_pieces(system)
        if tools:
            yield b', "tools": '
            yield from value_pieces(tools)
            if tool_choice:
                yield b', "tool_choice": {"type": ' + json.dumps(tool_choice).encode() + b"}"
        if mcp_servers:  # Claude's MCP connector: servers the API calls itself
            yield b', "mcp_servers": '
            yield from value_pieces(mcp_servers)
        yield b', "messages": '
        yield from value_pieces(messages)
        yield b"}"


class Claude:
    """One call's client, made by Models (llm/models.py) for the call: reads key, model, endpoint and max_tokens
    from the config (settings apply at once), the call's limits and Claude's MCP connector servers (sent with
    every call that offers tools, the agent's turns, with their toolsets and beta header) from the Models."""

    def __init__(self, models):
        self.models = models
        self.config = models.config

    async def stream(self, system, messages, *, tools=None, on_delta=None, tool_choice=None, model=None,
                     on_tool=None, max_tokens=None, profile=None, fail_fast=False):
        """Stream one reply; returns the MessageAssembler (content, text, stop_reason, usage).

        `on_delta(text)` is awaited for every text delta; `tool_choice` "none" forbids tool use;
        `model` and `max_tokens` override the configured ones for this call; `on_tool(name)` is awaited
        when one of Claude's server tools (web search) starts. `profile`: another anthropic-format profile
        (llm/profiles.py: its URL, key and model; Claude's server tools only on Anthropic's own API); None is
        claude, llm_config's. `fail_fast`: see retried().
        Raises ModelError with a message for the user."""
        cfg = self.config
        if profile is None:
            api_key, base, name = cfg.get("llm_config", "api_key"), cfg.get("llm_config", "api_base"), None
            if not api_key:
                raise ModelError("no_api_key", "No Anthropic API key is set. Set one with: set_api_key <key>")
        else:
            api_key, base, name, model = profile.key, profile.url, profile.name, profile.model
            if not api_key:
                raise ModelError("no_api_key", "Model profile {0} has no key. Set one with: llm_key {0} <key>"
                                 .format(name))
        model = model or cfg.get("llm_config", "model")
        url = base.rstrip("/") + "/v1/messages"
        headers = {
            "x-api-key": api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        line_max = SSE_LINE_MAX
        own = profile is None or profile.anthropic_own
        servers = self.models.mcp_servers if tools and own else None  # the connector rides with the agent's tools
        if tools:
            from mimi.llm import claude_tools

            if servers:
                tools = list(tools) + claude_tools.toolsets(servers)
            beta = claude_tools.beta_header(tools)
            if beta:
                headers["anthropic-beta"] = beta
            if claude_tools.has_server_tools(tools):
                line_max = _SERVER_LINE_MAX
        max_tokens = max_tokens or cfg.get("llm_config", "max_tokens")
        body = JsonBody(system, messages, tools, model, max_tokens, tool_choice, servers)

        async def attempt(streamed):
            return await self._attempt(url, headers, body, model, on_delta, streamed, line_max, on_tool, name)

        return await retried(attempt, name or "Claude", fail_fast)

    async def _attempt(self, url, headers, body, model, on_delta, streamed, line_max=SSE_LINE_MAX, on_tool=None,
                       profile=None):
        who = profile or "Claude"
        try:
            limits = self.models
            response = await http.request("POST", url, headers, body, limits.idle_s, limits.first_byte_s,
                                          limits.deadline_s)
        except http.TLSError as exc:
            raise ModelError("tls", "Cannot reach {}: {}. {}".format(_api(profile), exc, _TLS_HINT))
        except http.HTTPError as exc:
            raise ModelError("network", "Cannot reach {}: {}".format(_api(profile), exc), retryable=True)
        try:
            if response.status != 200:
                raw = await response.read(ERROR_BODY_MAX)
                raise from_response(response.status, response.headers, raw, model, profile, self.models.secrets())
            parser = SSEParser()
            assembler = MessageAssembler()
            while not assembler.done:
                line = await response.readline(line_max)
                if line is None:
                    raise ModelError("cut", _CUT_MESSAGE.format(who, "the stream ended early"), True)
                event = parser.feed(line)
                if event is None:
                    continue
                delta = assembler.handle(event[0], event[1])
                if assembler.started_tool is not None:
                    name, assembler.started_tool = assembler.started_tool, None
                    if on_tool:
                        await on_tool(name)
                if delta:
                    streamed[0] = True
                    if on_delta:
                        await on_delta(delta)
            return assembler
        except StreamError as exc:
            raise from_stream_error(exc, profile, self.models.secrets())
        except http.LineTooLong as exc:  # a proxy's or a broken stream's doing: worth another try before text
            raise ModelError("bad_stream", "{}'s reply could not be read: {}".format(who, exc), True)
        except http.HTTPError as exc:
            raise ModelError("cut", _CUT_MESSAGE.format(who, exc), True)
        except ValueError as exc:  # an SSE event over its cap, or bad bytes
            raise ModelError("bad_stream", "{}'s reply could not be read: {}".format(who, exc))
        except MemoryError:  # one event (a web search result block) larger than the free heap
            raise ModelError("memory", "{}'s reply could not be read: one of its events does not fit "
                             "in this board's memory (web search results are the usual cause: set_search off)"
                             .format(who))
        finally:
            await response.aclose()


def _api(profile):
    """What a network error names: the Anthropic API, or model profile <name>."""
    return "model profile " + profile if profile else "the Anthropic API"
