# `make sim`'s offline brain: a clearly labelled stand-in for Claude that echoes what the user said
# and runs a tool when asked in an obvious way, so the agent loop can be seen working end to end.
import json
import re

from host_sim.sse_replies import text, tool_use

LABEL = "(offline demo: no API key set)"
CONTEXT_PREFIX = "[context]"  # the firmware's own line before each user turn (agent/context.py)
SHOWN_MAX = 600  # characters of a tool's answer quoted back
# The firmware's own checks (a watcher's reading, the heartbeat): the demo judges nothing, so it stays quiet with
# the word each check takes for "nothing to say" (firmware/mimi/watch/service.py, channels/system.py).
_QUIET = (("[watcher ", "WATCH_OK"), ("[heartbeat]", "HEARTBEAT_OK"))
_ASKS = (
    # (pattern over what the user said, tool, input from the match, what the demo says first)
    (re.compile(r"\b(what(?:'s| is)? the time|what time|the time now|what day|what(?:'s| is) the date|"
                r"today's date)\b", re.I),
     "get_current_time", lambda m: {}, "Let me look at the board's clock."),
    (re.compile(r"^\s*(?:please\s+)?remember(?:\s+that)?[\s:,]+(.+?)\s*$", re.I | re.S),
     "remember", lambda m: {"text": m.group(1)}, "I'll write that to my long-term memory."),
)


def _texts(content):
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if b.get("type") == "text"]


def said(content):
    """What the user typed: the text blocks of their turn without the [context] line."""
    return "\n".join(t for t in _texts(content) if not t.startswith(CONTEXT_PREFIX)).strip()


def _tool_names(messages):
    names = {}
    for message in messages:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
    return names


def _result_text(block):
    content = block.get("content", "")
    shown = content if isinstance(content, str) else " ".join(_texts(content))
    return shown if len(shown) <= SHOWN_MAX else shown[:SHOWN_MAX] + "..."


def _clock(result):
    try:
        now = json.loads(result)
        date, clock = now["utc"].rstrip("Z").split("T")
    except (ValueError, KeyError, AttributeError):
        return None
    return "It is {} UTC on {}, {} (the board's clock).".format(clock[:5], now.get("weekday", ""), date)


def _after_tools(messages, results):
    names = _tool_names(messages)
    lines = []
    for block in results:
        name = names.get(block.get("tool_use_id"), "a tool")
        result = _result_text(block)
        if name == "get_current_time" and not block.get("is_error") and _clock(result):
            result = _clock(result)
        verb = "failed" if block.get("is_error") else "answered"
        lines.append("The tool {} {}: {}".format(name, verb, result))
    lines.append("(That was the agent loop at work; with a real API key, Claude chooses the tools.)")
    return "\n".join(lines)


def reply(body, chunk=8, delay=0.0):
    """The demo's answer to one Messages API request body, streamed in chunk-character pieces."""
    messages = body["messages"]
    last = messages[-1]
    content = last["content"] if last["role"] == "user" else ""
    results = [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
    if results:
        return text(_after_tools(messages, results), chunk, delay)
    words = said(content)
    for prefix, quiet in _QUIET:
        if words.startswith(prefix):
            return text(quiet, chunk, delay)
    offered = {tool.get("name") for tool in body.get("tools") or ()}
    for pattern, name, make_input, preface in _ASKS:
        match = pattern.search(words)
        if match and name in offered:
            return tool_use(name, make_input(match), text="{} {}".format(LABEL, preface), chunk=chunk,
                            delay=delay)
    return text("{} You said: {}".format(LABEL, words), chunk, delay)
