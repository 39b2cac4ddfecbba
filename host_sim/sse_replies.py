# Scripted replies of the fake Anthropic API: the SSE events they stream, faults included.
import json
import secrets

# Steps a reply hands to the server: ("write", bytes), ("sleep", seconds), ("cut", None).
WRITE = "write"
SLEEP = "sleep"
CUT = "cut"

DEFAULT_CHUNK = 8
STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
ERROR_TYPES = {status: kind for kind, status in STREAM_ERROR_STATUS.items()}
DEFAULT_ERROR_MESSAGES = {
    400: "Invalid request",
    401: "invalid x-api-key",
    403: "Your API key does not have permission to use the specified resource.",
    404: "Not Found",
    413: "Request exceeds the maximum allowed number of bytes.",
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}


def new_id(prefix):
    """A fresh id shaped like the real ones: msg_01..., toolu_01..., req_01..."""
    return "{}_01{}".format(prefix, secrets.token_hex(11))


def dumps(obj):
    """Compact JSON, as the real API writes it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def escape_non_ascii(data):
    """JSON bytes with every non-ASCII character written as a \\u escape (a surrogate pair beyond
    the BMP), as encoders with ensure_ascii do: equally valid JSON, which a client must read too."""
    text = data.decode("utf-8")
    if text.isascii():
        return data
    return "".join(ch if ord(ch) < 0x80 else json.dumps(ch)[1:-1] for ch in text).encode()


def sse(name, data):
    """One SSE event in the real API's exact layout."""
    body = data if isinstance(data, str) else dumps(data)
    return "event: {}\ndata: {}\n\n".format(name, body).encode()


PING = sse("ping", '{"type": "ping"}')  # the real API puts a space in this one


def approx_tokens(text):
    return max(1, len(text) // 4)


def _pieces(s, size):
    return [s[i:i + size] for i in range(0, len(s), size)]


class Reply:
    """One answer to one request: content blocks streamed in chunks, maybe with a fault."""

    def __init__(self, blocks, stop_reason="end_turn", chunk=DEFAULT_CHUNK, delay=0.0):
        if chunk < 1:
            raise ValueError("chunk must be at least 1")
        self.blocks = blocks
        self.stop_reason = stop_reason
        self.chunk = chunk
        self.delay = delay
        self.fault = None  # None, "stream_error", "cut", "stall", "garbage"
        self.error_type = None
        self.error_message = None
        self.stall_seconds = 0.0
        self.stall_before_headers = False
        self.text_before = ""  # a fault strikes after this much of the first text block
        self.usage = None  # scripted usage figures that replace the fake's approximations
        self.search_seconds = 0.0  # the wait after a server_tool_use block (the search itself)

    def __repr__(self):
        return "<Reply {} fault={} blocks={}>".format(self.stop_reason, self.fault, self.blocks)

    def output_tokens(self):
        if self.usage and "output_tokens" in self.usage:
            return self.usage["output_tokens"]
        n = 0
        for block in self.blocks:
            if block["type"] == "text":
                n += approx_tokens(block["text"])
            elif "input" in block:  # tool_use, server_tool_use; server results are not Claude's output
                n += approx_tokens(dumps(block["input"]))
        return max(1, n)

    def server_uses(self):
        """usage.server_tool_use as the real API reports it, or None without server tool calls."""
        counts = {}
        for block in self.blocks:
            if block["type"] == "server_tool_use":
                key = block["name"] + "_requests"
                counts[key] = counts.get(key, 0) + 1
        return counts or None

    def billed(self, usage):
        """The input-side usage to report: the approximation with any scripted figures over it."""
        scripted = {k: v for k, v in (self.usage or {}).items() if k != "output_tokens"}
        return dict(usage, **scripted)

    def message(self, model, usage, message_id):
        """The whole message, for `stream: false` and for message_start (with empty content)."""
        return {"id": message_id, "type": "message", "role": "assistant",
                "content": [dict(b) for b in self.blocks], "model": model,
                "stop_reason": self.stop_reason, "stop_sequence": None, "usage": dict(usage)}

    def steps(self, model, usage, message_id):
        """The stream as steps for the server to carry out, faults included."""
        start = self.message(model, usage, message_id)
        start["content"] = []
        start["stop_reason"] = None
        start["usage"] = dict(usage, output_tokens=1)
        garbage = self.fault == "garbage"
        if garbage:
            yield WRITE, b": keepalive\n\n"
        yield WRITE, sse("message_start", {"type": "message_start", "message": start})
        if garbage:
            yield WRITE, b'event: future_thing\ndata: {"type":"future_thing","detail":{"a":1}}\n\n'
        pinged = False
        for index, block in enumerate(self.blocks):
            yield from self._block_start(index, block, garbage)
            if not pinged:
                yield WRITE, PING
                pinged = True
            if block["type"] == "text" and self.fault in ("stream_error", "cut", "stall"):
                split = len(self.text_before)
                yield from self._deltas(index, block["text"][:split], None, garbage)
                yield from self._fault(index)
                if self.fault != "stall":
                    return
                yield from self._deltas(index, block["text"][split:], None, garbage)
            elif block["type"] == "text":
                for citation in block.get("citations") or ():  # the real stream: citations before the text
                    yield WRITE, sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                             "delta": {"type": "citations_delta",
                                                                       "citation": citation}})
                yield from self._deltas(index, block["text"], None, garbage)
            elif "input" in block:
                yield from self._deltas(index, None, block["input"], garbage)
            yield WRITE, sse("content_block_stop", {"type": "content_block_stop", "index": index})
            if block["type"] in ("server_tool_use", "mcp_tool_use") and self.search_seconds:
                yield SLEEP, self.search_seconds  # Anthropic runs the search: its result comes a while later
        if not pinged:
            yield WRITE, PING
        final_usage = {"output_tokens": self.output_tokens()}
        if self.server_uses():
            final_usage["server_tool_use"] = self.server_uses()
        yield WRITE, sse("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
            "usage": final_usage})
        if garbage:
            yield WRITE, b"event:future_thing\ndata:{}\n\n: the end is near\n\n"
        yield WRITE, sse("message_stop", {"type": "message_stop"})

    def _block_start(self, index, block, garbage):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            if block.get("citations"):
                opened["citations"] = []
        elif block["type"] in ("tool_use", "server_tool_use", "mcp_tool_use"):
            opened = {"type": block["type"], "id": block["id"], "name": block["name"], "input": {}}
            if "server_name" in block:  # mcp_tool_use: the connector's server
                opened["server_name"] = block["server_name"]
        else:  # a server tool's result arrives whole in its content_block_start
            opened = dict(block)
        event = {"type": "content_block_start", "index": index, "content_block": opened}
        if garbage:  # `data:` without the space is valid SSE
            yield WRITE, "event: content_block_start\ndata:{}\n\n".format(dumps(event)).encode()
        else:
            yield WRITE, sse("content_block_start", event)

    def _deltas(self, index, text, args, garbage):
        """text_delta pieces of `text`, or input_json_delta pieces of `args` (first one empty)."""
        if text is None:
            pieces = [""] + _pieces(dumps(args), self.chunk)
            kind, key = "input_json_delta", "partial_json"
        else:
            pieces = _pieces(text, self.chunk)
            kind, key = "text_delta", "text"
        for n, piece in enumerate(pieces):
            event = {"type": "content_block_delta", "index": index,
                     "delta": {"type": kind, key: piece}}
            yield WRITE, self._delta_bytes(event, n) if garbage else sse(event["type"], event)
            if self.delay:
                yield SLEEP, self.delay

    def _delta_bytes(self, event, n):
        """A delta event with the oddities a correct SSE parser must tolerate."""
        if n % 3 == 0:  # data split over two lines at a comma: joined by "\n" it is still JSON
            head = '{{"type":"content_block_delta","index":{},'.format(event["index"])
            tail = '"delta":{}}}'.format(dumps(event["delta"]))
            return "event: content_block_delta\ndata: {}\ndata: {}\n\n".format(head, tail).encode()
        if n % 3 == 1:  # a comment line inside the event
            return "event: content_block_delta\n: keepalive\ndata:{}\n\n".format(
                dumps(event)).encode()
        return b": keepalive\n\n" + sse("content_block_delta", event)

    def _fault(self, index):
        if self.fault == "stream_error":
            error = {"type": "error", "error": {"type": self.error_type,
                                                 "message": self.error_message}}
            yield WRITE, sse("error", error)
        elif self.fault == "cut":  # half an event, then the connection is gone
            event = sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                "delta": {"type": "text_delta", "text": "lost"}})
            yield WRITE, event[:len(event) // 2]
            yield CUT, None
        elif self.fault == "stall" and not self.stall_before_headers:
            yield SLEEP, self.stall_seconds


class ErrorReply:
    """An HTTP error answered before any stream starts."""

    def __init__(self, status, type=None, message=None, retry_after=None, headers=None):
        self.status = status
        self.type = type or ERROR_TYPES.get(status, "api_error")
        self.message = message or DEFAULT_ERROR_MESSAGES.get(status, "Error")
        self.retry_after = retry_after
        self.headers = dict(headers or {})

    def __repr__(self):
        return "<ErrorReply {} {}>".format(self.status, self.type)


def _text_block(s):
    return {"type": "text", "text": s}


def text(s, chunk=DEFAULT_CHUNK, delay=0.0, stop_reason="end_turn", usage=None):
    """A plain text answer streamed `chunk` characters per text_delta, `delay` s apart.

    `usage` (e.g. {"input_tokens": 900, "output_tokens": 100}) replaces the approximated figures."""
    reply = Reply([_text_block(s)], stop_reason, chunk, delay)
    reply.usage = usage
    return reply


def tool_use_multi(calls, text=None, chunk=DEFAULT_CHUNK, delay=0.0):
    """An optional text block, then one tool_use block per (name, input[, id]) call."""
    blocks = [_text_block(text)] if text else []
    for call in calls:
        name, args = call[0], call[1]
        call_id = call[2] if len(call) > 2 and call[2] else new_id("toolu")
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
    return Reply(blocks, "tool_use", chunk, delay)


def tool_use(name, input, id=None, text=None, chunk=DEFAULT_CHUNK, delay=0.0):
    """One tool call (input streamed as input_json_delta pieces), stop_reason tool_use."""
    return tool_use_multi([(name, input, id)], text, chunk, delay)


def error(status, type=None, message=None, retry_after=None, headers=None):
    """A pre-stream HTTP error with the real JSON body (and `retry-after` when given)."""
    return ErrorReply(status, type, message, retry_after, headers)


def _faulty(fault, text_before, text_after="", chunk=DEFAULT_CHUNK, delay=0.0):
    reply = Reply([_text_block(text_before + text_after)], "end_turn", chunk, delay)
    reply.fault, reply.text_before = fault, text_before
    return reply


def stream_error(text_before="", type="overloaded_error", message="Overloaded",
                 chunk=DEFAULT_CHUNK, delay=0.0):
    """A 200 stream that sends some text, then `event: error` and ends."""
    reply = _faulty("stream_error", text_before, chunk=chunk, delay=delay)
    reply.error_type, reply.error_message = type, message
    return reply


def cut(text_before="", chunk=DEFAULT_CHUNK, delay=0.0):
    """Some text, half of the next event, then the TCP connection closes (no last chunk)."""
    return _faulty("cut", text_before, chunk=chunk, delay=delay)


def stall(text_before="", seconds=30.0, text_after="", before_headers=False,
          chunk=DEFAULT_CHUNK, delay=0.0):
    """Some text, then silence for `seconds`, then `text_after` and a normal end.

    With before_headers=True the silence comes before the HTTP status line.
    """
    reply = _faulty("stall", text_before, text_after, chunk, delay)
    reply.stall_seconds, reply.stall_before_headers = seconds, before_headers
    return reply


def garbage(text, chunk=DEFAULT_CHUNK, delay=0.0):
    """Normal text wrapped in comments, unknown events, split data lines and `data:` w/o space."""
    reply = Reply([_text_block(text)], "end_turn", chunk, delay)
    reply.fault = "garbage"
    return reply


def long_line(n, stop_reason="end_turn"):
    """A text reply whose single text_delta `data:` line is exactly n bytes long."""
    skeleton = sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": ""}})
    overhead = len(skeleton.split(b"\n")[1])
    if n < overhead:
        raise ValueError("long_line needs n >= {}".format(overhead))
    return Reply([_text_block("x" * (n - overhead))], stop_reason, chunk=max(1, n))
