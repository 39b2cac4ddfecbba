# A request made to fit its profile's context window (llm_ctx, llm/profiles.py Profile.window): the reply keeps its
# room, then the prompt is trimmed in one fixed order, so no server ever cuts it (Ollama keeps its end, the
# instructions lost) or refuses it (llama.cpp's server answers 400). Tokens are estimated, never counted: 4 bytes of
# the request's JSON a token, a photo 1,600, and an eighth of the window kept free for a tokenizer that counts more.
# Loaded for a call to a window under profiles.WINDOW_CHECKED_BELOW (a small model's): a larger one holds
# whatever the board sends.
from mimi.llm.errors import ModelError
from mimi.platform import const
from mimi.storage.history_pieces import HistoryPieces

_BYTES_PER_TOKEN = const(4)
_IMAGE_TOKENS = const(1600)  # a photo as a model counts it (about a 1,568-pixel side)
_MESSAGE_TOKENS = const(8)  # a message's framing in a chat template
_MESSAGE_BYTES = const(64)  # a history message's JSON framing ({"role": ..., "content": ...}) and its template's
_REQUEST_TOKENS = const(24)  # the request's own framing
_REPLY_SHARE = const(4)  # the reply keeps at least a quarter of the window (max_tokens, when less)
_MARGIN_SHARE = const(8)  # an eighth of the window left free
_TOOLS = "tools"  # the core tools' place in the order: after the skills, before MEMORY


def tokens(system, messages, tools):
    """The estimated prompt tokens of a request."""
    count = _REQUEST_TOKENS + _size(system) // _BYTES_PER_TOKEN + _MESSAGE_TOKENS
    for message in messages:
        records = getattr(message, "records", None)  # a session's history (storage/history_pieces.py)
        count += _MESSAGE_TOKENS * (len(records) if records is not None else 1)
        count += _images(message) * _IMAGE_TOKENS + _size(message) // _BYTES_PER_TOKEN
    for tool in tools or ():
        count += _size(tool) // _BYTES_PER_TOKEN
    return count


def fit(window, who, system, messages, tools, max_tokens, fitting=None):
    """(system, messages, tools, max_tokens) within `window` tokens: the reply's room kept (a quarter of the window
    at least, or max_tokens when less), the prompt trimmed in order: the oldest history messages first, then the
    daily notes (oldest first) and the skills list (fitting: (context, now, guest), the turn's system prompt, made
    again without them by agent/context.py), then the core tools but find_tools (tools/finder.py: what it found
    stays), then MEMORY and USER; never SOUL, the message or this turn's rounds. max_tokens is what the window
    leaves, max_tokens at most. who: the profile's name, for the error.
    ModelError ("window") when even the least prompt cannot fit."""
    usable = window - window // _MARGIN_SHARE
    budget = usable - min(max_tokens, window // _REPLY_SHARE)
    used = tokens(system, messages, tools)
    if used > budget:
        system, messages, tools, used = _trimmed(budget, used, system, messages, tools, fitting)
    if used > budget:
        raise ModelError("window", "This does not fit model profile {}'s window of {} tokens: even without history, "
                         "memory and tools it needs about {} tokens, {} with the reply's room. Send a shorter "
                         "message, or give the profile the server's own window: llm_ctx {} <tokens>."
                         .format(who, window, used, used + window - budget, who))
    return system, messages, tools, min(max_tokens, usable - used)


def _trimmed(budget, used, system, messages, tools, fitting):
    history = messages[0] if messages and hasattr(messages[0], "records") else None
    if history is not None:
        kept = _newest(history, (budget - tokens(system, messages[1:], tools)) * _BYTES_PER_TOKEN)
        messages = ([kept] if kept is not None else []) + messages[1:]
        used = tokens(system, messages, tools)
    if used <= budget or fitting is None and not tools:
        return system, messages, tools, used
    left_out = []
    for name in _parts(fitting) if fitting is not None else (_TOOLS,):
        if used <= budget:
            break
        if name == _TOOLS:
            from mimi.tools.registry import CORE, FIND_TOOLS

            tools = [tool for tool in tools or () if _name(tool) == FIND_TOOLS or _name(tool) not in CORE] or None
        else:
            left_out.append(name)
            from mimi.agent.context import blocks

            system = blocks(fitting[0].sections(fitting[1], fitting[2], left_out))
        used = tokens(system, messages, tools)
    return system, messages, tools, used


def _parts(fitting):
    """What of the system prompt may go, in the order it goes: the daily notes (the oldest day first), the skills,
    the core tools (_TOOLS), MEMORY, USER; a turn that is not the owner's has only the skills to give."""
    context, now, guest = fitting
    if guest:
        return ("Skills", _TOOLS)
    days = ["Daily notes " + date for date in context.dates(now)]
    days.reverse()
    return days + ["Skills", _TOOLS, "MEMORY", "USER"]


def _newest(history, room):
    """The newest of a session's messages (storage/history_pieces.py) that fit in `room` bytes, opening with a user
    message; None when none does."""
    count = 0
    records = history.records
    for record in reversed(records):
        room -= record[3] + _MESSAGE_BYTES
        if room < 0:
            break
        count += 1
    while count and records[len(records) - count][4] != "user":
        count -= 1
    if count == len(records):
        return history
    kept = HistoryPieces(history.path, count) if count else None
    return kept if kept is not None and kept.records else None


def _name(tool):
    return tool.get("name") if isinstance(tool, dict) else tool.name


def _images(value):
    if isinstance(value, dict):
        if value.get("type") == "image":
            return 1
        value = value.get("content")
    if isinstance(value, list):
        return sum(_images(item) for item in value)
    return 0


def _size(value):
    """Bytes of a value's JSON, near enough: a photo counts nothing here (_IMAGE_TOKENS), a Streamed part its len()."""
    if value is None:
        return 4
    if isinstance(value, (str, bytes)):
        return len(value) + 2
    if isinstance(value, dict):
        if value.get("type") == "image":
            return 0
        size = 2
        for key in value:
            size += len(key) + 4 + _size(value[key])
        return size
    if isinstance(value, (list, tuple)):
        size = 2
        for item in value:
            size += _size(item) + 2
        return size
    try:
        return len(value)  # a Streamed part (prompt file, history, a tool's definition), a reply's Text
    except TypeError:
        return 8  # a number, True
