# A request's JSON written in pieces, the one writer of both clients' bodies (llm/claude.py, llm/openai_request.py):
# dicts and lists as they are walked, long strings escaped a slice at a time, Streamed parts (jsontext.py: a file on
# flash, a reply's pieces, an encoded definition) as they are read. Loaded for a model call.
import json

from mimi.jsontext import ESCAPE_SLICE, Streamed, escaped


def value_pieces(value):
    """value as JSON bytes pieces, long strings in slices and Streamed parts as they are read: no large single
    allocation."""
    if isinstance(value, str) and len(value) > ESCAPE_SLICE:
        yield b'"'
        yield from escaped(value)
        yield b'"'
    elif isinstance(value, bytes):  # already JSON (kept encoded, e.g. a built-in tool's definition)
        yield value
    elif isinstance(value, Streamed):
        if value.is_json:
            yield value
        else:  # the inside of a JSON string
            yield b'"'
            yield value
            yield b'"'
    elif isinstance(value, dict):
        yield b"{"
        first = True
        for key in value:
            yield (b"" if first else b", ") + json.dumps(key).encode() + b": "
            first = False
            yield from value_pieces(value[key])
        yield b"}"
    elif isinstance(value, list):
        yield b"["
        for i, item in enumerate(value):
            if i:
                yield b", "
            yield from value_pieces(item)
        yield b"]"
    else:
        yield json.dumps(value).encode()
