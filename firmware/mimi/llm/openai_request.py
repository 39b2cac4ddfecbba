# An OpenAI-compatible Chat Completions request written from the forms the agent keeps (the Messages API's): the
# system prompt as the first message, a tool round as tool_calls and tool messages, a photo as a data URL read
# from flash while it is sent, tools as functions. Loaded only by a board that uses an openai profile.
import json

from mimi.jsontext import Streamed, escaped
from mimi.llm.body import value_pieces
from mimi.platform import const

_READ_SLICE = const(1024)  # bytes of the prompt file read and sent at a time
TOOL_ERROR = "[tool error] "  # a failed call's result starts so: the tool message has no error flag


class Joined(Streamed):
    """Texts sent as one JSON string, never joined in RAM: a str is escaped as it is written, a Streamed part (a
    reply's pieces, a text file: escaped already; a file's base64) is written as it comes."""

    def __init__(self, parts):
        self.parts = parts

    def chunks(self):
        for part in self.parts:
            if isinstance(part, str):
                yield from escaped(part)
            else:
                yield from part.chunks()


class _PromptText(Streamed):
    """The system prompt file's blocks (agent/prompt_file.py, Messages API JSON) as one string's inside: the
    escaped text of each block, read from flash at the spans recorded when the file was written."""

    def __init__(self, prompt):
        self.path, self.spans = prompt.path, prompt.spans

    def __len__(self):
        return sum(end - start for start, end in self.spans)

    def chunks(self):
        with open(self.path, "rb") as f:
            for start, end in self.spans:
                f.seek(start)
                while start < end:
                    data = f.read(min(_READ_SLICE, end - start))
                    if not data:
                        raise OSError("the system prompt file changed while it was sent")
                    start += len(data)
                    yield data


class _Functions(Streamed):
    """The request's tools as functions, written from the kept definitions (a built-in's LazyTool, an MCP server's
    tool: views of their bytes; an owner's tool: its dict): one object, no copy."""

    is_json = True

    def __init__(self, tools):
        self.tools = tools

    def chunks(self):
        for i, tool in enumerate(self.tools):
            yield b", " if i else b"["
            yield from _function(tool)
        yield b"]"


_FUNCTION_HEAD = b'{"type": "function", "function": '
_PARAMETERS_KEY = b'"parameters": '


def _function(tool):
    """A tool's function, as pieces: views of its kept definition with "input_schema" renamed "parameters"
    (tools/lazy_tool.py Encoded.schema_parts), or made from its dict."""
    kept = isinstance(tool, Streamed)  # a definition kept encoded (tools/lazy_tool.py Encoded)
    parts = tool.schema_parts() if kept else None
    if parts is None:
        if kept:
            tool = tool.decoded()
        yield json.dumps({"type": "function", "function": {"name": tool["name"], "description": tool["description"],
                                                             "parameters": tool["input_schema"]}}).encode()
        return
    yield _FUNCTION_HEAD
    yield parts[0]
    yield _PARAMETERS_KEY
    yield parts[1]
    yield b"}"


def system_text(system):
    """The system prompt (a prompt file, its blocks, or a str) as one string for the system message."""
    if isinstance(system, str) or system is None:
        return system or ""
    if isinstance(system, Streamed):  # the prompt file (agent/prompt_file.py): its blocks' spans recorded
        return Joined([_PromptText(system)])
    return Joined([block["text"] for block in system])


def tools_of(tools):
    """The request's tools as functions, or None; Claude's server tools (dicts with a type) have no counterpart."""
    kept = [tool for tool in tools or () if isinstance(tool, Streamed) or "type" not in tool]
    return _Functions(kept) if kept else None


def messages_of(system, messages):
    """The chat's messages: the system message, then the turns, each Messages API block in its chat form."""
    out = [{"role": "system", "content": system_text(system)}]
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):  # the history from flash (plain text turns) or a text turn
            out.append(message)
        elif message["role"] == "assistant":
            out.append(_assistant(content))
        else:
            parts = []
            for block in content:
                if block.get("type") == "tool_result":  # one tool message per call, right after the calls
                    out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": _result(block)})
                else:
                    parts.append(_part(block))
            if parts:
                out.append({"role": "user", "content": parts})
    return out


def _result(block):
    text = block.get("content")
    if isinstance(text, list):  # result blocks: their texts
        text = "\n".join(part.get("text", "") for part in text if isinstance(part, dict))
    return TOOL_ERROR + text if block.get("is_error") else text


def _assistant(content):
    texts = [block["text"] for block in content if block.get("type") == "text"]
    calls = [{"id": block["id"], "type": "function",
              "function": {"name": block["name"], "arguments": json.dumps(block["input"])}}
             for block in content if block.get("type") == "tool_use"]
    out = {"role": "assistant", "content": Joined(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return out


def _part(block):
    kind = block.get("type")
    source = block.get("source") or {}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": Joined(
            ["data:{};base64,".format(source["media_type"]), source["data"]])}}
    if kind == "document" and source.get("type") == "base64":
        return {"type": "file", "file": {"filename": block.get("title") or "document.pdf", "file_data": Joined(
            ["data:{};base64,".format(source["media_type"]), source["data"]])}}
    if kind == "document":  # a text file: its text, headed by its name
        return {"type": "text", "text": Joined(["[file {}]\n".format(block.get("title") or ""), source["data"]])}
    return {"type": "text", "text": block.get("text", "")}


class ChatBody:
    """The request body, encoded while it is written (net/http walks pieces() to count, then to send)."""

    def __init__(self, model, messages, tools, max_tokens, tokens_field, tool_choice=None):
        self.parts = (model, messages, tools, max_tokens, tokens_field, tool_choice)

    def pieces(self):
        model, messages, tools, max_tokens, tokens_field, tool_choice = self.parts
        yield '{{"model": {}, "stream": true, "stream_options": {{"include_usage": true}}, "{}": {}'.format(
            json.dumps(model), tokens_field, max_tokens).encode()
        if tools:
            yield b', "tools": '
            yield from value_pieces(tools)
            if tool_choice:
                yield b', "tool_choice": ' + json.dumps(tool_choice).encode()
        yield b', "messages": '
        yield from value_pieces(messages)
        yield b"}"
