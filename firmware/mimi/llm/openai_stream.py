# Assembles a streamed OpenAI-compatible chat completion (chat.completion.chunk events) into what the agent reads
# of a Claude reply (llm/stream.py): text pieces, tool calls as tool_use blocks, a stop reason, usage.
from mimi import jsontext
from mimi.llm.stream import TEXT_MAX, TOOL_INPUT_MAX, StreamError
from mimi.llm.text import Text, TextBlock
from mimi.platform import const

_CALLS_MAX = const(16)  # tool calls one reply may ask for
_FOLD = const(24)  # as llm/stream.py: small deltas joined into one piece every so often
_PIECE_CHARS = const(512)
# finish_reason -> the Messages API's stop_reason the agent acts on
_STOPS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
          "content_filter": "refusal"}
DONE = "[DONE]"


class _Call:
    def __init__(self, call_id, name):
        self.id, self.name = call_id, name
        self.pieces = []  # arguments' fragments, joined and parsed once the reply ends
        self.size = 0


class ChatAssembler:
    """Feed it (event_name, data) pairs from SSEParser. handle() returns the text a chunk adds (to show), else None.
    Reasoning deltas (reasoning_content, reasoning) are never text. After [DONE], or the stream's end once a
    finish_reason came: reply_text, text, content/blocks(), tool_calls, stop_reason, usage, model, estimated."""

    searched = False  # no server tools here
    started_tool = None

    def __init__(self, text_max=TEXT_MAX, tool_input_max=TOOL_INPUT_MAX):
        self.text_max, self.tool_input_max = text_max, tool_input_max
        self.model = None
        self.message_id = None
        self.finish = None  # the server's finish_reason
        self.usage = None  # the Messages API's usage keys, once the server reported it
        self.done = False
        self.estimated = False
        self._text = TextBlock()
        self._size = 0
        self._calls = []  # _Call, in the order they started
        self._by_index = {}  # the stream's tool call index -> _Call

    def handle(self, event_name, data):
        if event_name != "message":  # an OpenAI-compatible stream names no events
            return None
        if data == DONE:
            self.done = True
            return None
        try:
            chunk = jsontext.loads(data)
        except (ValueError, RuntimeError):
            raise StreamError("bad_event", "chunk is not valid JSON: {!r}".format(data[:80])) from None
        if not isinstance(chunk, dict):
            raise StreamError("bad_event", "chunk is not a JSON object: {!r}".format(data[:80]))
        error = chunk.get("error")
        if error is not None:  # OpenRouter and others: an error inside a 200 stream
            raise _stream_error(error)
        self.message_id = self.message_id or chunk.get("id")
        self.model = self.model or chunk.get("model")
        if isinstance(chunk.get("usage"), dict):
            self._usage(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:  # the usage chunk, or a keep-alive
            return None
        choice = choices[0] if isinstance(choices[0], dict) else {}
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return None
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, fragment in enumerate(calls):
                if isinstance(fragment, dict):
                    self._fragment(position, fragment)
        text = delta.get("content")
        if not isinstance(text, str) or not text:
            text = delta.get("refusal")  # a refusal is said to the user like text
        if isinstance(text, str) and text:
            self._add_text(text)
            return text
        return None

    def _add_text(self, text):
        self._size += len(text)
        if self._size > self.text_max:
            raise StreamError("reply_too_long", "the reply is over {} characters".format(self.text_max))
        block = self._text
        block.pieces.append(text)
        block.loose += 1
        block.loose_size += len(text)
        if block.loose >= _FOLD or block.loose_size >= _PIECE_CHARS:
            block.fold()

    def _fragment(self, position, fragment):
        """One piece of a tool call: by its index, the id and name in its first piece, arguments spread over
        many; a piece with a new id at an index taken (Ollama numbers whole calls 0 each) starts another call."""
        index = fragment.get("index")
        index = index if isinstance(index, int) else position
        function = fragment.get("function") if isinstance(fragment.get("function"), dict) else {}
        call_id, name = fragment.get("id"), function.get("name")
        call = self._by_index.get(index)
        if call is None or (isinstance(call_id, str) and call_id and call.id and call_id != call.id):
            if len(self._calls) >= _CALLS_MAX:
                raise StreamError("too_many_tool_calls", "the reply asks for more than {} tool calls".format(
                    _CALLS_MAX))
            call = _Call(call_id if isinstance(call_id, str) else "", name if isinstance(name, str) else "")
            self._calls.append(call)
            self._by_index[index] = call
        else:
            if isinstance(call_id, str) and call_id and not call.id:
                call.id = call_id
            if isinstance(name, str) and name and not call.name:
                call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a whole object (some servers): kept as its JSON
            import json

            arguments = json.dumps(arguments)
        if isinstance(arguments, str) and arguments:
            call.size += len(arguments)
            if call.size > self.tool_input_max:
                raise StreamError("tool_input_too_long", "the input of tool {} is over {} characters".format(
                    call.name, self.tool_input_max))
            call.pieces.append(arguments)

    def _usage(self, usage):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if not isinstance(prompt, int) and not isinstance(completion, int):
            return
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        cached = cached if isinstance(cached, int) else 0
        prompt = prompt if isinstance(prompt, int) else 0
        self.usage = {"input_tokens": max(0, prompt - cached), "output_tokens": completion or 0,
                      "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0}

    def finished(self, request_bytes):
        """The stream ended (after [DONE], or at its end once a finish_reason came): the calls are parsed, and
        usage estimated from the characters (about 4 a token) when the server reported none."""
        self.done = True
        self._text.fold()
        for call in self._calls:
            call.input = _arguments(call)
            if not call.id:
                call.id = "call_{}".format(self._calls.index(call))
        if self.usage is None:
            self.estimated = True
            self.usage = {"input_tokens": max(1, request_bytes // 4), "output_tokens": max(1, self._out_chars() // 4),
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}

    def _out_chars(self):
        n = self._size
        for call in self._calls:
            n += call.size + len(call.name)
        return n

    @property
    def stop_reason(self):
        if self._calls and self.finish in (None, "stop", "tool_calls", "function_call"):
            return "tool_use"  # some servers end a tool round with "stop"
        return _STOPS.get(self.finish, self.finish or "end_turn")

    @property
    def reply_text(self):
        return Text(self._text.pieces)

    @property
    def text(self):
        return str(self.reply_text)

    @property
    def tool_calls(self):
        return [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.input} for call in self._calls]

    @property
    def content(self):
        return self.blocks(True)

    def blocks(self, joined=False):
        """The reply as Messages API blocks, as the next request sends them back (llm/openai_request.py); a
        blank text is left out."""
        blocks = []
        if len(self.reply_text.strip()):
            if joined or len(self.reply_text) <= jsontext.ESCAPE_SLICE:  # short: one str (file_pieces unloaded)
                blocks.append({"type": "text", "text": self.text})
            else:
                from mimi.llm.file_pieces import TextPieces

                blocks.append({"type": "text", "text": TextPieces(self._text.pieces)})
        return blocks + self.tool_calls


def _arguments(call):
    source = "".join(call.pieces)
    call.pieces = None
    if not source.strip():
        return {}
    try:
        value = jsontext.loads(source)
    except (ValueError, RuntimeError):
        value = None
    if not isinstance(value, dict):
        raise StreamError("invalid_tool_input", "the input of tool {} is not a JSON object: {!r}".format(
            call.name, source[:80]))
    return value


def _stream_error(error):
    if not isinstance(error, dict):
        return StreamError("api_error", str(error)[:200])
    kind = error.get("type") or error.get("code")
    message = error.get("message")
    kind = str(kind) if kind else "api_error"
    if kind in ("server_error", "502", "503", "500"):
        kind = "api_error"
    if kind in ("429", "rate_limit_exceeded"):
        kind = "rate_limit_error"
    return StreamError(kind, message if isinstance(message, str) and message else "the server reported an error")
