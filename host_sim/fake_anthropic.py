# A fake Anthropic Messages API (streaming, validation, prompt caching, scripted faults) for tests.
import argparse
import json
import threading
import time
from collections import deque

from aiohttp import web

from host_sim.background_server import BackgroundServer, drop_connection
from host_sim.anthropic_validation import Invalid, check_body, check_headers
from host_sim.sse_replies import (  # noqa: F401  (re-exported: the scripting vocabulary)
    CUT, SLEEP, STREAM_ERROR_STATUS, WRITE, ErrorReply, Reply, approx_tokens, cut, dumps,
    error, escape_non_ascii, garbage, long_line, new_id, stall, stream_error, text, tool_use, tool_use_multi)
from host_sim.sse_server_tools import mcp_tool, tool_search, web_result, web_search  # noqa: F401  (re-exported)

MAX_BODY_BYTES = 32 * 1024 * 1024  # the real Messages API's request size limit
_READ_PIECE = 64 * 1024


# ---- what the fake answers when nothing is scripted ----

def _media_of(block):
    """What the default brain says it was sent: '[image image/jpeg, 1234 bytes]'."""
    source = block.get("source") or {}
    data = source.get("data") or ""
    size = len(data) if source.get("type") == "text" else len(data) * 3 // 4 - data[-2:].count("=")
    return "[{} {}, {} bytes]".format(block["type"], source.get("media_type"), size)


def _text_of(content):
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") if b.get("type") == "text" else _media_of(b)
                     for b in content if b.get("type") in ("text", "image", "document"))


def heard(messages):
    """The last user turn as text; a turn of only tool results is reported as such."""
    content = messages[-1]["content"] if messages[-1]["role"] == "user" else ""
    said = _text_of(content)
    if said or isinstance(content, str):
        return "You said: " + said
    results = [_text_of(b.get("content", "")) for b in content if b.get("type") == "tool_result"]
    return "Tool result: " + " | ".join(results)


def _cache_controlled(system, tools):
    blocks = (system if isinstance(system, list) else []) + (tools or [])
    return any("cache_control" in b for b in blocks)


def _in_context(tools, messages):
    """The tools the model sees: those not deferred, and those a tool search referenced earlier in the turn."""
    if not tools or not any(tool.get("defer_loading") for tool in tools):
        return tools
    found = set()
    for message in messages:
        for block in message["content"] if isinstance(message.get("content"), list) else ():
            if block.get("type") == "tool_search_tool_result":
                for ref in (block.get("content") or {}).get("tool_references") or ():
                    found.add(ref.get("tool_name"))
    return [tool for tool in tools if not tool.get("defer_loading") or tool.get("name") in found]


def _headers_of(request):
    headers = {}
    for name, value in request.headers.items():
        name = name.lower()
        headers[name] = headers[name] + ", " + value if name in headers else value
    return headers


def _parsed_or_text(raw):
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return raw.decode("utf-8", "replace")


class FakeAnthropic(BackgroundServer):
    """The Messages API on a local port: script() replies, read `requests`, start()/stop()."""

    name = "fake-anthropic"

    def __init__(self, api_key="sk-ant-test-key", ssl_context=None, host="127.0.0.1", port=0,
                 known_models=None, max_body_bytes=MAX_BODY_BYTES, min_cache_tokens=0,
                 chunk=8, delay=0.0, log_writes=False, brain=None, escape_non_ascii=False):
        super().__init__(ssl_context, host, port)
        self.brain = brain  # callable(body, chunk, delay) -> Reply answering when nothing is scripted (default: echo)
        self.api_key = api_key
        self.log_writes = log_writes  # benchmarks: each request's record gets "writes"
        self.known_models = None if known_models is None else frozenset(known_models)
        self.max_body_bytes = max_body_bytes
        self.min_cache_tokens = min_cache_tokens
        self.chunk, self.delay = chunk, delay  # how the default brain streams
        # Answers with non-ASCII as \\u escapes (surrogate pairs beyond the BMP) instead of raw UTF-8:
        # both are valid JSON and the real API's events may hold either.
        self.escape_non_ascii = escape_non_ascii
        self._lock = threading.Lock()
        self._script = deque()
        self._requests = []
        self._cached_prefix = None

    # ---- scripting and recording (thread-safe) ----

    def script(self, *replies):
        """Queue replies; each request takes the oldest (the default brain answers when empty)."""
        for reply in replies:
            if not isinstance(reply, (Reply, ErrorReply)):
                raise TypeError("script() takes replies built by text(), tool_use(), error()...")
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self):
        """How many scripted replies are still waiting for a request."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self):
        """Copies of every request received so far (refused ones too), oldest first."""
        with self._lock:
            return [dict(r) for r in self._requests]

    def wait_requests(self, count, timeout=5.0):
        """Block until at least `count` requests were answered; returns them."""
        deadline = time.monotonic() + timeout
        while True:
            done = [r for r in self.requests if r["status"] is not None]
            if len(done) >= count or time.monotonic() > deadline:
                return done
            time.sleep(0.01)

    def reset(self):
        """Forget the script, the recorded requests and the cached prompt prefix; raw UTF-8 again."""
        with self._lock:
            self.escape_non_ascii = False
            self._script.clear()
            del self._requests[:]
            self._cached_prefix = None

    # ---- serving ----

    async def _handle(self, request):
        record = {"method": request.method, "path": request.path, "headers": _headers_of(request),
                  "body": None, "time": time.time(), "status": None}
        with self._lock:
            self._requests.append(record)
        try:
            raw = await self._read_body(request)
            with self._lock:
                record["body_read_at"] = time.time()  # the request's last byte has arrived
            if request.path != "/v1/messages":
                raise Invalid(404, "not_found_error", "Not Found")
            if request.method != "POST":
                raise Invalid(405, "invalid_request_error", "Method Not Allowed")
            if raw is None:
                raise Invalid(413, "request_too_large",
                              "Request exceeds the maximum allowed number of bytes.")
            parsed = _parsed_or_text(raw)
            with self._lock:
                record["body"] = parsed
            check_headers(record["headers"], self.api_key)
            body = check_body(raw, self.known_models, record["headers"])
        except Invalid as exc:
            return self._error(record, ErrorReply(exc.status, exc.kind, exc.message))
        with self._lock:
            reply = self._script.popleft() if self._script else None
        if reply is None:
            reply = self._default_reply(body)
        if isinstance(reply, ErrorReply):
            return self._error(record, reply)
        usage = reply.billed(self._usage(body))
        with self._lock:
            record["usage"] = usage  # the input side as billed (benchmarks: bench/prompts.py)
        if body.get("stream"):
            return await self._stream(request, record, reply, body["model"], usage)
        return await self._whole(request, record, reply, body["model"], usage)

    async def _read_body(self, request):
        """The body, or None when it is over max_body_bytes."""
        if (request.content_length or 0) > self.max_body_bytes:
            return None
        data = bytearray()
        while True:
            piece = await request.content.read(_READ_PIECE)
            if not piece:
                return bytes(data)
            data += piece
            if len(data) > self.max_body_bytes:
                return None

    def _default_reply(self, body):
        if self.brain is not None:
            return self.brain(body, self.chunk, self.delay)
        said = heard(body["messages"])
        limit = body["max_tokens"] * 4  # the approx_tokens rate
        if len(said) > limit:
            return text(said[:limit], self.chunk, self.delay, stop_reason="max_tokens")
        return text(said, self.chunk, self.delay)

    def _usage(self, body):
        """Approximate usage; a cache_control'd system+tools identical to last time is a read. Deferred tools
        (defer_loading) count only once a tool search found them, as the API bills them."""
        system, tools = body.get("system"), _in_context(body.get("tools"), body["messages"])
        prefix = json.dumps({"system": system, "tools": tools}, sort_keys=True,
                            separators=(",", ":"))
        prefix_tokens = approx_tokens(prefix) if (system or tools) else 0
        turns = approx_tokens(dumps(body["messages"]))
        usage = {"input_tokens": turns + prefix_tokens, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if _cache_controlled(system, tools) and prefix_tokens >= self.min_cache_tokens:
            with self._lock:
                hit = prefix == self._cached_prefix
                self._cached_prefix = prefix
            usage["input_tokens"] = turns
            field = "cache_read_input_tokens" if hit else "cache_creation_input_tokens"
            usage[field] = prefix_tokens
        return usage

    def _finish(self, record, status):
        with self._lock:
            record["status"] = status

    def _error(self, record, reply):
        request_id = new_id("req")
        body = {"type": "error", "error": {"type": reply.type, "message": reply.message},
                "request_id": request_id}
        headers = {"request-id": request_id}
        if reply.retry_after is not None:
            headers["retry-after"] = str(reply.retry_after)
        headers.update(reply.headers)
        self._finish(record, reply.status)
        return web.Response(status=reply.status, text=dumps(body), headers=headers,
                            content_type="application/json")

    async def _cut(self, request):
        """Close the connection once what was written has left (no terminating chunk)."""
        await drop_connection(request)

    async def _stream(self, request, record, reply, model, usage):
        if reply.fault == "stall" and reply.stall_before_headers:
            if not await self._sleep(reply.stall_seconds):
                await self._cut(request)
                return web.Response(status=503)
        response = web.StreamResponse(status=200, headers={
            "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
            "request-id": new_id("req")})
        self._finish(record, 200)
        writes = None
        if self.log_writes:
            writes = record["writes"] = []  # [(time.time() as the write began, bytes)], in order
        try:
            await response.prepare(request)
            for step, value in reply.steps(model, usage, new_id("msg")):
                if step == WRITE:
                    if self.escape_non_ascii:
                        value = escape_non_ascii(value)
                    if writes is not None:
                        writes.append((time.time(), value))
                    await response.write(value)
                elif step == CUT or not await self._sleep(value):
                    await self._cut(request)
                    break
        except ConnectionError:
            pass  # the client went away: nothing left to tell it
        return response

    async def _whole(self, request, record, reply, model, usage):
        """`stream: false`: one JSON message; stream faults become their non-stream forms."""
        if reply.fault == "stream_error":
            status = STREAM_ERROR_STATUS.get(reply.error_type, 500)
            return self._error(record, ErrorReply(status, reply.error_type, reply.error_message))
        if reply.fault == "stall" and not await self._sleep(reply.stall_seconds):
            await self._cut(request)
            return web.Response(status=503)
        message = reply.message(model, dict(usage, output_tokens=reply.output_tokens()),
                                new_id("msg"))
        payload = dumps(message).encode()
        if self.escape_non_ascii:
            payload = escape_non_ascii(payload)
        headers = {"request-id": new_id("req"), "content-type": "application/json"}
        self._finish(record, 200)
        if reply.fault != "cut":
            return web.Response(status=200, body=payload, headers=headers)
        response = web.StreamResponse(status=200, headers=headers)
        response.content_length = len(payload)
        try:
            await response.prepare(request)
            await response.write(payload[:len(payload) // 2])
            await self._cut(request)
        except ConnectionError:
            pass
        return response

    # ---- running in a background thread ----

    def _application(self):
        return web.Application(client_max_size=self.max_body_bytes + 1)


def main(argv=None):
    from host_sim import chaos  # seeded random faults (--chaos-seed)

    parser = argparse.ArgumentParser(description="Fake Anthropic Messages API (offline demo).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--api-key", default="sk-ant-test-key")
    parser.add_argument("--delay", type=float, default=0.02, help="seconds between text chunks")
    parser.add_argument("--demo", action="store_true",
                        help="the labelled offline demo brain (host_sim/demo_brain.py), as make sim uses")
    chaos.add_arguments(parser)
    args = parser.parse_args(argv)
    brain = None
    if args.demo:
        from host_sim import demo_brain

        brain = demo_brain.reply
    fake = FakeAnthropic(api_key=args.api_key, host=args.host, port=args.port, delay=args.delay,
                         brain=brain)
    chaos.from_arguments(args, anthropic=fake)
    fake.serve_forever("fake Anthropic API")


if __name__ == "__main__":
    main()
