# Assembles the events of a streamed Claude Messages API reply into content blocks and usage.
from mimi import jsontext
from mimi.llm.text import Text, TextBlock
from mimi.platform import const

# Most characters of text one reply may carry (all text blocks together).
TEXT_MAX = const(64 * 1024)
# Most characters of JSON one tool call's input may take.
TOOL_INPUT_MAX = const(16 * 1024)
# Server tools (web search and fetch run by Anthropic): their blocks are kept whole to be sent back on a
# pause_turn or a tool round; at most this many of them per reply, and citations per text block.
SERVER_BLOCKS_MAX = const(16)
_CITATIONS_MAX = const(16)
# Result blocks of server tools, sent back as they came; the streamed server_tool_use input like tool_use.
SERVER_RESULTS = ("web_search_tool_result", "web_fetch_tool_result", "tool_search_tool_result")
# usage.server_tool_use counters, kept flat in `usage` beside the token counts.
SERVER_USAGE_KEYS = ("web_search_requests", "web_fetch_requests")
# A text block's small deltas are joined into one piece once this many of them, or this many characters,
# have come since the last join: few objects, and no piece (so no allocation) grows with the reply.
_FOLD = const(24)
_PIECE_CHARS = const(512)

# The usage counters a reply reports; message_start gives them, message_delta updates them.
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)

_KNOWN_EVENTS = ("message_start", "content_block_start", "content_block_delta", "content_block_stop",
                 "message_delta", "message_stop", "error")


class StreamError(Exception):
    """The reply stream failed: the API reported an error, or the stream broke the protocol."""

    def __init__(self, kind, message):
        super().__init__("{}: {}".format(kind, message))
        self.kind = kind  # the API error type ("overloaded_error", ...) or one of ours
        self.message = message


def _bad(message):
    return StreamError("bad_event", message)


def _get(obj, key, kind, what):
    """obj[key] checked to be of type kind; a clear StreamError when it is missing or wrong."""
    value = obj.get(key)
    if not isinstance(value, kind):
        raise _bad("{} has no valid '{}'".format(what, key))
    return value


class _ToolBlock:
    def __init__(self, block_id, name, start_input, kind="tool_use"):
        self.kind = kind  # tool_use, or server_tool_use (run by Anthropic; its result follows in the stream)
        self.id = block_id
        self.name = name
        self.start_input = start_input
        self.pieces = []  # partial_json strings, joined and parsed once at content_block_stop
        self.size = 0


class MessageAssembler:
    """Feed it (event_name, data) pairs from SSEParser; it builds the reply as it streams.

    handle() returns the text of a text_delta (to show as it arrives) or None.
    After message_stop: content (blocks to send back on a tool round), text, tool_calls,
    stop_reason, usage, message_id, model.
    """

    def __init__(self, text_max=TEXT_MAX, tool_input_max=TOOL_INPUT_MAX):
        self.text_max = text_max
        self.tool_input_max = tool_input_max
        self.message_id = None
        self.model = None
        self.stop_reason = None
        self.usage = {}
        for key in USAGE_KEYS + SERVER_USAGE_KEYS:
            self.usage[key] = 0
        self.done = False
        self.server_blocks = 0
        self._links = {}  # index of a text block citing web pages -> " ([site](url))" shown after it
        self._linked = []  # URLs linked so far: each page once per reply
        self.started_tool = None  # a server tool (or MCP connector server) whose call just began: the draft says so
        self._open = {}  # index -> block still streaming (None for a block type we skip)
        self._finished = {}  # index -> finished block dict
        self._text_size = 0

    def handle(self, event_name, data_str):
        """Take one event; return the text it added (a text_delta, or the links after a passage citing web
        pages), else None."""
        if event_name == "message":  # no "event:" line: the data's own type names it
            event = self._parse(data_str)
            event_name = event.get("type")
        elif event_name in _KNOWN_EVENTS:
            event = self._parse(data_str)
        else:  # ping, and event types added after this was written
            return None
        if event_name == "content_block_delta":
            return self._delta(event)
        if event_name == "content_block_start":
            self._start(event)
        elif event_name == "content_block_stop":
            return self._stop(event)
        elif event_name == "message_start":
            message = _get(event, "message", dict, "message_start")
            self.message_id = message.get("id")
            self.model = message.get("model")
            self._merge_usage(message.get("usage"))
        elif event_name == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") is not None:
                self.stop_reason = delta["stop_reason"]
            self._merge_usage(event.get("usage"))
        elif event_name == "message_stop":
            self.done = True
        elif event_name == "error":
            error = event.get("error")
            if not isinstance(error, dict):
                error = {}
            kind = error.get("type")
            message = error.get("message")
            raise StreamError(
                kind if isinstance(kind, str) and kind else "api_error",
                message if isinstance(message, str) and message else "the API reported an error",
            )
        return None

    @property
    def content(self):
        """Finished blocks in index order, shaped as the API takes them back in the next request.
        Blank text blocks are left out: the API rejects them in a request."""
        return self.blocks(True)

    def blocks(self, joined=False):
        """content; unless joined, a text block's text is its pieces (llm/file_pieces.py TextPieces), escaped
        as the next request is written: a long reply sent back after a tool round is never joined. A text no
        longer than one escaped slice is one str anyway (and file_pieces stays unloaded)."""
        blocks = []
        for index in sorted(self._finished):
            block = self._finished[index]
            if block["type"] == "text":
                text = block["text"]
                if not text.strip():
                    continue
                block = dict(block)
                if joined or len(text) <= jsontext.ESCAPE_SLICE:
                    block["text"] = str(text)
                else:
                    from mimi.llm.file_pieces import TextPieces

                    block["text"] = TextPieces(text.pieces)
            blocks.append(block)
        return blocks

    @property
    def text(self):
        """All finished text blocks, joined as the API means them (no separator); a block that cites web
        pages is followed by links to them, each page linked once."""
        return str(self.reply_text)

    @property
    def reply_text(self):
        """text as a Text: the pieces of every text block (and links), none joined."""
        parts = []
        for i in sorted(self._finished):
            block = self._finished[i]
            if block["type"] == "text":
                parts.extend(block["text"].pieces)
                if i in self._links:
                    parts.append(self._links[i])
        return Text(parts)

    @property
    def tool_calls(self):
        """The finished tool_use blocks, in index order."""
        return [self._finished[i] for i in sorted(self._finished) if self._finished[i]["type"] == "tool_use"]

    @property
    def searched(self):
        """True when the reply used a server tool (its result blocks are in content)."""
        return self.server_blocks > 0

    def _parse(self, data_str):
        try:
            event = jsontext.loads(data_str)
        except (ValueError, RuntimeError):  # RuntimeError: nesting too deep for the parser
            raise _bad("event data is not valid JSON: {!r}".format(data_str[:80])) from None
        if not isinstance(event, dict):
            raise _bad("event data is not a JSON object: {!r}".format(data_str[:80]))
        return event

    def _merge_usage(self, usage):
        if not isinstance(usage, dict):
            return
        for key in USAGE_KEYS:
            value = usage.get(key)
            if isinstance(value, int):  # null means "not reported here": keep what we have
                self.usage[key] = value
        server = usage.get("server_tool_use")
        if isinstance(server, dict):
            for key in SERVER_USAGE_KEYS:
                value = server.get(key)
                if isinstance(value, int):
                    self.usage[key] = value

    def _index(self, event, what):
        index = _get(event, "index", int, what)
        if index < 0:
            raise _bad("{} has a negative index".format(what))
        return index

    def _start(self, event):
        index = self._index(event, "content_block_start")
        if index in self._open or index in self._finished:
            raise _bad("content block {} started twice".format(index))
        block = _get(event, "content_block", dict, "content_block_start")
        kind = block.get("type")
        if kind == "text":
            opened = TextBlock()
            text = block.get("text")
            if isinstance(text, str) and text:
                self._add_text(opened, text)
            if isinstance(block.get("citations"), list) and block["citations"]:
                opened.citations = block["citations"][:_CITATIONS_MAX]
        elif kind == "tool_use" or kind == "server_tool_use":
            what = "{} block {}".format(kind, index)
            start_input = block.get("input")
            name = _get(block, "name", str, what)
            opened = _ToolBlock(
                _get(block, "id", str, what),
                name,
                start_input if isinstance(start_input, dict) else {},
                kind,
            )
            if kind == "server_tool_use":
                self._count_server(index)
                self.started_tool = name
        elif kind in SERVER_RESULTS:  # arrives whole in content_block_start: kept as is, sent back as is
            self._count_server(index)
            _get(block, "tool_use_id", str, "{} block {}".format(kind, index))
            self._finished[index] = block
            opened = None
        else:  # thinking, redacted_thinking, the MCP connector's blocks, future types: not ours to keep
            opened = None  # (an MCP connector's turn: the session keeps the answer's text only)
            if kind == "mcp_tool_use" and isinstance(block.get("server_name"), str):
                self.started_tool = block["server_name"]  # the draft says "using <server>..."
        self._open[index] = opened

    def _delta(self, event):
        index = self._index(event, "content_block_delta")
        if index not in self._open:
            raise _bad("delta for content block {} which is not open".format(index))
        block = self._open[index]
        delta = _get(event, "delta", dict, "content_block_delta")
        if delta.get("type") == "citations_delta" and isinstance(block, TextBlock):
            citation = delta.get("citation")
            if isinstance(citation, dict):
                if block.citations is None:
                    block.citations = []
                if len(block.citations) < _CITATIONS_MAX:
                    block.citations.append(citation)
            return None
        if block is None:  # a block type we skip (server tools also stream input_json_delta)
            return None
        kind = delta.get("type")
        if kind == "text_delta":
            if not isinstance(block, TextBlock):
                raise _bad("text_delta for block {} which is not text".format(index))
            text = _get(delta, "text", str, "text_delta")
            self._add_text(block, text)
            return text
        if kind == "input_json_delta":
            if not isinstance(block, _ToolBlock):
                raise _bad("input_json_delta for block {} which is not a tool call".format(index))
            piece = _get(delta, "partial_json", str, "input_json_delta")
            block.size += len(piece)
            if block.size > self.tool_input_max:
                limit = self.tool_input_max
                message = "the input of tool {} is over {} characters".format(block.name, limit)
                raise StreamError("tool_input_too_long", message)
            block.pieces.append(piece)
        # thinking_delta, signature_delta, citations_delta and future deltas: ignored
        return None

    def _add_text(self, block, text):
        self._text_size += len(text)
        if self._text_size > self.text_max:
            message = "the reply is over {} characters".format(self.text_max)
            raise StreamError("reply_too_long", message)
        block.pieces.append(text)
        block.loose += 1
        block.loose_size += len(text)
        if block.loose >= _FOLD or block.loose_size >= _PIECE_CHARS:
            block.fold()  # many tiny strings fragment a small heap; one string the size of the reply needs a hole

    def _stop(self, event):
        index = self._index(event, "content_block_stop")
        if index not in self._open:
            raise _bad("stop for content block {} which is not open".format(index))
        block = self._open.pop(index)
        if isinstance(block, TextBlock):
            block.fold()
            self._finished[index] = {"type": "text", "text": Text(block.pieces)}
            if block.citations:
                self._finished[index]["citations"] = block.citations
                from mimi.llm import citations

                links = citations.links(block.citations, self._linked)
                if links:
                    self._links[index] = links
                    return links  # shown like text: the cited passage is followed by its sources
        elif isinstance(block, _ToolBlock):
            self._finished[index] = {
                "type": block.kind,
                "id": block.id,
                "name": block.name,
                "input": self._tool_input(block),
            }
        return None

    def _count_server(self, index):
        self.server_blocks += 1
        if self.server_blocks > SERVER_BLOCKS_MAX:
            raise StreamError("too_many_server_blocks",
                              "the reply holds more than {} web search blocks".format(SERVER_BLOCKS_MAX))

    def _tool_input(self, block):
        source = "".join(block.pieces)
        block.pieces = None
        if not source:  # no input_json_delta, or only empty ones
            return block.start_input
        try:
            value = jsontext.loads(source)
        except (ValueError, RuntimeError):
            value = None
        if not isinstance(value, dict):
            raise StreamError(
                "invalid_tool_input",
                "the input of tool {} is not a JSON object: {!r}".format(block.name, source[:80]),
            )
        return value
