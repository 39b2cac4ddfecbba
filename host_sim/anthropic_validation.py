# Validation of Messages API requests, refused the way the real API refuses them.
import json
import re

from host_sim import anthropic_mcp
from host_sim.unicode_text import holds_surrogate

API_VERSIONS = ("2023-06-01", "2023-01-01")
TOP_LEVEL_FIELDS = frozenset((
    "model", "messages", "max_tokens", "system", "stream", "tools", "tool_choice", "metadata",
    "temperature", "top_p", "top_k", "stop_sequences", "thinking", "service_tier", "container",
    "mcp_servers", "context_management"))
BLOCK_TYPES = frozenset((
    "text", "image", "document", "search_result", "tool_use", "tool_result", "thinking",
    "redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "mcp_tool_use",
    "mcp_tool_result", "tool_search_tool_result"))
# Claude's server tools by versioned type, and the beta header a type needs (None: generally available).
SERVER_TOOL_TYPES = {"web_search_20250305": ("web_search", None), "web_search_20260209": ("web_search", None),
                     "web_fetch_20250910": ("web_fetch", "web-fetch-2025-09-10"),
                     "tool_search_tool_bm25_20251119": ("tool_search_tool_bm25", "advanced-tool-use-2025-11-20"),
                     "tool_search_tool_regex_20251119": ("tool_search_tool_regex", "advanced-tool-use-2025-11-20")}
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"
TOOL_SEARCH_TYPES = ("tool_search_tool_bm25_20251119", "tool_search_tool_regex_20251119")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
IMAGE_MAX_BYTES = 5 * 1024 * 1024  # decoded
PDF_MAX_BYTES = 32 * 1024 * 1024
_MAGIC = {"image/jpeg": (b"\xff\xd8\xff",), "image/png": (b"\x89PNG\r\n\x1a\n",),
          "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",), "application/pdf": (b"%PDF-",)}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SYSTEM_ROLE_MESSAGE = ('messages: Unexpected role "system". The Messages API accepts a top-level '
                       '`system` parameter, not "system" as an input message role.')


class Invalid(Exception):
    """A request the real API would refuse before streaming: HTTP status, error type, message."""

    def __init__(self, status, kind, message):
        Exception.__init__(self, message)
        self.status, self.kind, self.message = status, kind, message


def _bad(message):
    raise Invalid(400, "invalid_request_error", message)


def check_headers(headers, api_key):
    """Credentials, then version, then content type: the real API's order."""
    key = headers.get("x-api-key")
    if key is None:
        raise Invalid(401, "authentication_error", "x-api-key header is required")
    if key != api_key:
        raise Invalid(401, "authentication_error", "invalid x-api-key")
    version = headers.get("anthropic-version")
    if version is None:
        _bad("anthropic-version: header is required")
    if version not in API_VERSIONS:
        _bad("anthropic-version: invalid version {!r}".format(version))
    if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        _bad("content-type: must be application/json")


def check_body(raw, known_models, headers=None):
    """The parsed request body, or Invalid for anything the real API refuses."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        _bad("The request body is not valid JSON: {}".format(exc))
    if holds_surrogate(body):  # "\\ud83c" alone: valid JSON syntax, not valid Unicode text
        _bad("The request body is not valid JSON: lone leading or trailing surrogate in a string")
    if not isinstance(body, dict):
        _bad("The request body must be a JSON object")
    for field in body:
        if field not in TOP_LEVEL_FIELDS:
            _bad("{}: Extra inputs are not permitted".format(field))
    betas = anthropic_mcp.betas_of(headers)
    anthropic_mcp.check(body, betas, _bad)  # Claude's MCP connector: mcp_servers, the toolsets, the beta
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            _bad("{}: Field required".format(field))
    if not isinstance(body["model"], str):
        _bad("model: Input should be a valid string")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        _bad("max_tokens: Input should be a valid integer")
    if max_tokens < 1:
        _bad("max_tokens: Input should be greater than or equal to 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        _bad("stream: Input should be a valid boolean")
    _check_system(body.get("system"))
    _check_tools(body.get("tools"), (headers or {}).get("anthropic-beta", ""), betas)
    _check_messages(body["messages"])
    if known_models is not None and body["model"] not in known_models:
        raise Invalid(404, "not_found_error", "model: {}".format(body["model"]))
    return body


def _check_cache_control(block, where):
    control = block.get("cache_control")
    if control is None:
        return
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        _bad("{}.cache_control: Input tag does not match the expected tag "
             "'ephemeral'".format(where))


def _check_system(system):
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        _bad("system: Input should be a valid string or a list of text blocks")
    for i, block in enumerate(system):
        where = "system.{}".format(i)
        if not isinstance(block, dict) or block.get("type") != "text":
            _bad("{}.type: Input should be 'text'".format(where))
        if not isinstance(block.get("text"), str) or not block["text"]:
            _bad("{}.text: text content blocks must be non-empty".format(where))
        _check_cache_control(block, where)


def _check_server_tool(tool, where, betas):
    kind = tool["type"]
    known = SERVER_TOOL_TYPES.get(kind)
    if known is None or (known[1] and known[1] not in [b.strip() for b in betas.split(",")]):
        expected = ", ".join("'{}'".format(t) for t in sorted(SERVER_TOOL_TYPES) if not SERVER_TOOL_TYPES[t][1])
        _bad("{}: Input tag '{}' found using 'type' does not match any of the expected tags: 'custom', "
             "{}".format(where, kind, expected))
    if tool.get("name") != known[0]:
        _bad("{}.name: Input should be '{}'".format(where, known[0]))
    uses = tool.get("max_uses")
    if uses is not None and (not isinstance(uses, int) or isinstance(uses, bool) or uses < 1):
        _bad("{}.max_uses: Input should be greater than 0".format(where))


def _check_tools(tools, betas="", beta_list=()):
    if tools is None:
        return
    if not isinstance(tools, list):
        _bad("tools: Input should be a valid list")
    names = set()
    deferred = searching = loaded = 0
    for i, tool in enumerate(tools):
        where = "tools.{}".format(i)
        if not isinstance(tool, dict):
            _bad("{}: Input should be a valid dictionary".format(where))
        if "defer_loading" in tool:  # the tool search tool's beta: a definition held back until a search finds it
            if TOOL_SEARCH_BETA not in [b.strip() for b in betas.split(",")]:
                _bad("{}.defer_loading: Extra inputs are not permitted".format(where))
            if not isinstance(tool["defer_loading"], bool):
                _bad("{}.defer_loading: Input should be a valid boolean".format(where))
            if tool["defer_loading"] and tool.get("type") in TOOL_SEARCH_TYPES:
                _bad("{}: the tool search tool cannot have defer_loading set to true".format(where))
        if tool.get("defer_loading") is True:
            deferred += 1
        elif tool.get("type") in TOOL_SEARCH_TYPES:
            searching += 1
        else:
            loaded += 1
        if anthropic_mcp.is_toolset(tool, beta_list):
            continue  # no name of its own: checked with mcp_servers
        if tool.get("type") == anthropic_mcp.TOOLSET:  # without the connector's beta: an unknown tag
            _check_server_tool(tool, where, betas)
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            _bad("{}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'".format(where))
        if tool.get("type", "custom") != "custom":
            _check_server_tool(tool, where, betas)
        else:
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                _bad("{}.input_schema: Input should be a JSON schema with type "
                     "'object'".format(where))
        _check_cache_control(tool, where)
        if name in names:
            _bad("tools: Tool names must be unique.")
        names.add(name)
    if deferred and not searching:
        _bad("tools: Tools with defer_loading require a tool search tool (tool_search_tool_bm25_20251119 or "
             "tool_search_tool_regex_20251119) in the same request")
    if deferred and not loaded and not searching:
        _bad("tools: At least one tool must not have defer_loading set to true")


def _blocks_of(message, where, may_be_empty):
    content = message.get("content")
    if isinstance(content, str):
        blocks = [{"type": "text", "text": content}] if content else []
    elif isinstance(content, list):
        blocks = content
    else:
        _bad("{}.content: Input should be a valid string or a list of content "
             "blocks".format(where))
    if not blocks and not may_be_empty:
        _bad("{}: all messages must have non-empty content except for the optional final "
             "assistant message".format(where))
    for j, block in enumerate(blocks):
        at = "{}.content.{}".format(where, j)
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in BLOCK_TYPES:
            _bad("{}.type: Input tag {!r} is not one of the expected tags".format(at, kind))
        if kind == "text" and (not isinstance(block.get("text"), str) or not block["text"]):
            _bad("{}.text: text content blocks must be non-empty".format(at))
        if kind == "tool_use" and not (isinstance(block.get("id"), str)
                                       and isinstance(block.get("name"), str)
                                       and isinstance(block.get("input"), dict)):
            _bad("{}: tool_use blocks need a string id and name and an object input".format(at))
        if kind in ("image", "document"):
            _check_media(block, at, kind)
        if kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "tool_search_tool_result"):
            key = "id" if kind == "server_tool_use" else "tool_use_id"
            if not isinstance(block.get(key), str):
                _bad("{}.{}: Field required".format(at, key))
        if kind == "tool_result":
            if not isinstance(block.get("tool_use_id"), str):
                _bad("{}.tool_use_id: Field required".format(at))
            if not isinstance(block.get("content", ""), (str, list)):
                _bad("{}.content: Input should be a valid string or list".format(at))
            if not isinstance(block.get("is_error", False), bool):
                _bad("{}.is_error: Input should be a valid boolean".format(at))
        _check_cache_control(block, at)
    return blocks


def _decoded(data, where):
    import base64
    import binascii

    if not isinstance(data, str):
        _bad("{}.data: Input should be a valid string".format(where))
    try:
        return base64.b64decode(data.encode("ascii"), validate=True)
    except (ValueError, binascii.Error, UnicodeEncodeError):
        _bad("{}.data: Invalid base64 data".format(where))


def _check_media(block, at, kind):
    """Image and document blocks as the real API checks them: source, media type, base64, size, content."""
    source = block.get("source")
    if not isinstance(source, dict):
        _bad("{}.source: Field required".format(at))
    stype = source.get("type")
    if kind == "document" and stype == "text":
        if source.get("media_type") != "text/plain":
            _bad("{}.source.text.media_type: Input should be 'text/plain'".format(at))
        if not isinstance(source.get("data"), str):
            _bad("{}.source.text.data: Input should be a valid string".format(at))
        return
    if stype != "base64":
        _bad("{}.source: Input tag {!r} found using 'type' does not match any of the expected tags: "
             "'base64', 'url'{}".format(at, stype, ", 'text', 'content'" if kind == "document" else ""))
    where = "{}.source.base64".format(at)
    media = source.get("media_type")
    allowed = IMAGE_TYPES if kind == "image" else ("application/pdf",)
    if media not in allowed:
        _bad("{}.media_type: Input should be {}".format(where, " or ".join("'{}'".format(m) for m in allowed)))
    data = _decoded(source.get("data"), where)
    limit = IMAGE_MAX_BYTES if kind == "image" else PDF_MAX_BYTES
    if len(data) > limit:
        _bad("{}: {} exceeds {} MB maximum: {} bytes > {} bytes".format(
            at, kind, limit // (1024 * 1024), len(data), limit))
    if not data.startswith(_MAGIC[media]):
        if kind == "image":
            _bad("{}: Image does not match the provided media type {}".format(at, media))
        _bad("{}: The PDF specified was not valid.".format(at))


def _check_messages(messages):
    if not isinstance(messages, list):
        _bad("messages: Input should be a valid list")
    if not messages:
        _bad("messages: at least one message is required")
    asked = []  # tool_use ids of the previous assistant message, to be answered next
    last = len(messages) - 1
    for i, message in enumerate(messages):
        where = "messages.{}".format(i)
        if not isinstance(message, dict):
            _bad("{}: Input should be a valid dictionary".format(where))
        role = message.get("role")
        if role == "system":
            _bad(SYSTEM_ROLE_MESSAGE)
        if role not in ("user", "assistant"):
            _bad("{}.role: Input should be 'user' or 'assistant'".format(where))
        if i == 0 and role != "user":
            _bad('messages: first message must use the "user" role')
        for field in message:
            if field not in ("role", "content"):
                _bad("{}.{}: Extra inputs are not permitted".format(where, field))
        final_assistant = i == last and role == "assistant"
        blocks = _blocks_of(message, where, final_assistant)
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        _check_tool_results(where, role, blocks, answered, asked)
        if asked:
            missing = [x for x in asked if x not in answered]
            if missing:
                _bad("messages.{}: `tool_use` ids were found without `tool_result` blocks "
                     "immediately after: {}. Each `tool_use` block must have a corresponding "
                     "`tool_result` block in the next message.".format(i - 1, ", ".join(missing)))
        asked = [b["id"] for b in blocks if b["type"] == "tool_use"] if role == "assistant" else []
        if len(set(asked)) != len(asked):
            _bad("{}: `tool_use` ids must be unique".format(where))
        if final_assistant and blocks and blocks[-1]["type"] == "text" \
                and blocks[-1]["text"] != blocks[-1]["text"].rstrip():
            _bad("messages: final assistant content cannot end with trailing whitespace")


def _check_tool_results(where, role, blocks, answered, asked):
    if not answered:
        return
    if role != "user":
        _bad("{}: tool_result blocks can only appear in user messages".format(where))
    for j, block in enumerate(blocks):
        if block["type"] == "tool_result" and block["tool_use_id"] not in asked:
            _bad("{}.content.{}: unexpected `tool_use_id` found in `tool_result` blocks: {}. "
                 "Each `tool_result` block must have a corresponding `tool_use` block in the "
                 "previous message.".format(where, j, block["tool_use_id"]))
    kinds = [b["type"] for b in blocks]
    if kinds[:len(answered)] != ["tool_result"] * len(answered):
        _bad("{}: tool_result blocks must come first in the content, before any other "
             "block".format(where))
