# An MCP server's tools as the registry holds them: mcp__<server>__<tool> (cut and made valid for the API), tier
# operator and level confirm until the owner says otherwise (a remote tool is code the owner has not read),
# their definitions kept encoded, and a call's result turned into text that fits a tool result.
import json

from mimi.platform import const
from mimi.safety import roles
from mimi.safety.policy import CONFIRM
from mimi.tools.lazy_tool import Encoded
from mimi.tools.registry import RESULT_MAX, ToolError

PREFIX = "mcp__"
NAME_MAX = const(64)  # the Messages API's tool name rule: ^[a-zA-Z0-9_-]{1,64}$
_DESCRIPTION_MAX = const(1024)  # characters of a tool's description sent to Claude
_SCHEMA_MAX = const(4096)  # bytes of a tool's input schema; a larger one is replaced by an open object
_HASH_CHARS = const(4)
_OPEN_SCHEMA = {"type": "object"}


def _valid_char(ch):
    return ch.isdigit() or ch in "_-" or "a" <= ch.lower() <= "z"


def api_name(server, tool, taken=()):
    """mcp__<server>__<tool> with every character the API refuses made "_", cut to 64 characters; a cut or
    clashing name ends in "_" and 4 hex digits of the tool's own name, so it stays the same across fetches."""
    name = PREFIX + server + "__" + "".join(ch if _valid_char(ch) else "_" for ch in tool)
    if len(name) <= NAME_MAX and name not in taken:
        return name
    mark = 0
    for ch in tool:
        mark = (mark * 31 + ord(ch)) & 0xFFFF
    return "{}_{:04x}".format(name[: NAME_MAX - _HASH_CHARS - 1], mark)


def definition(name, tool, server):
    """The request's definition of a remote tool, encoded once: its description (cut) and input schema."""
    description = tool.get("description") or tool.get("title") or ""
    if not isinstance(description, str) or not description.strip():
        description = "The {} tool of the MCP server {}".format(tool.get("name"), server)
    if len(description) > _DESCRIPTION_MAX:
        description = description[: _DESCRIPTION_MAX - 1] + "\u2026"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        schema = _OPEN_SCHEMA
    encoded = json.dumps(schema)
    if len(encoded) > _SCHEMA_MAX:
        encoded = json.dumps(_OPEN_SCHEMA)
    return '{{"name": {}, "description": {}, "input_schema": {}}}'.format(
        json.dumps(name), json.dumps(description), encoded).encode()


class RemoteTool(Encoded):
    """A tool of an MCP server, as the registry holds it: its own request definition, kept encoded (is_json,
    len(), chunks(): written into the request as it is, like a built-in's LazyTool); description and schema
    decoded when asked. run() asks the server through the MCP client, bounded by mcp_config.timeout_s."""

    acting = True  # [safety] it may change the world: the circuit breaker counts it
    tier = roles.OPERATOR  # [safety] the owner may lower or raise its level with tool_policy, not its tier
    level = CONFIRM

    def __init__(self, clients, server, remote_name, name, encoded):
        self.clients, self.server, self.remote_name = clients, server, remote_name
        self.name, self.encoded = name, encoded

    @property
    def timeout_s(self):  # the registry's bound: a little over the client's own, whose message is clearer
        return self.clients.timeout_s() + 1

    def __len__(self):
        return len(self.encoded)

    def chunks(self):
        return (self.encoded,)

    def _span(self):
        return self.encoded, 0, len(self.encoded)

    def decoded(self):
        return json.loads(self.encoded)

    async def run(self, data):
        return await self.clients.call(self.server, self.remote_name, data)


def _block_text(block):
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return block.get("text") if isinstance(block.get("text"), str) else ""
    if kind == "image":
        return "[an image ({}) was left out: the board passes text only]".format(block.get("mimeType") or "?")
    if kind == "audio":
        return "[an audio clip was left out: the board passes text only]"
    if kind == "resource":
        resource = block.get("resource") if isinstance(block.get("resource"), dict) else {}
        if isinstance(resource.get("text"), str):
            return resource["text"]
        return "[a file ({}) was left out: {}]".format(resource.get("mimeType") or "?", resource.get("uri") or "")
    if kind == "resource_link":
        return "[link: {} {}]".format(block.get("name") or "", block.get("uri") or "").replace("  ", " ")
    return "[a {} block was left out]".format(kind)


def result_text(result):
    """A tools/call result as the model's tool result: its text blocks joined, anything else a note, cut to the
    registry's RESULT_MAX; ToolError (its text) when the server says the call failed (isError)."""
    if not isinstance(result, dict):
        raise ToolError("the MCP server sent a result that is not an object")
    content = result.get("content") if isinstance(result.get("content"), list) else []
    parts = [_block_text(block) for block in content]
    if not content and "structuredContent" in result:
        parts.append(json.dumps(result["structuredContent"]))
    text = "\n".join(parts) or "(no output)"
    if len(text) > RESULT_MAX:
        note = "\n[result cut at {} characters]".format(RESULT_MAX)
        text = text[: RESULT_MAX - len(note)] + note
    if result.get("isError") is True:
        raise ToolError(text)
    return text
