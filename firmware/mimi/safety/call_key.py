# The key of a tool call, the same for equal inputs whatever their key order: what the circuit breaker
# counts (safety/breaker.py imports it at the first acting call; a read-only board never loads it).
import json

from mimi.platform import const

try:
    from hashlib import sha256
except ImportError:  # a build without hashlib: the key is the canonical text itself
    sha256 = None

_DEPTH_MAX = const(16)


def _feed(value, put, depth=0):
    """Write value as canonical JSON (object keys sorted) through put(text), piece by piece."""
    if depth > _DEPTH_MAX:
        raise ValueError("tool input is nested too deeply")
    if isinstance(value, dict):
        put("{")
        first = True
        for key in sorted(value):
            put("{}{}:".format("" if first else ",", json.dumps(str(key))))
            _feed(value[key], put, depth + 1)
            first = False
        put("}")
    elif isinstance(value, (list, tuple)):
        put("[")
        for i, item in enumerate(value):
            if i:
                put(",")
            _feed(item, put, depth + 1)
        put("]")
    else:
        put(json.dumps(value))


def canonical(value):
    """Canonical JSON text of a value: equal inputs give equal text whatever their key order."""
    parts = []
    _feed(value, parts.append)
    return "".join(parts)


def call_key(name, data):
    """A short key for (tool, input): the SHA-256 of the canonical text, streamed into the hash."""
    if sha256 is None:
        return name + "\n" + canonical(data)
    digest = sha256(name.encode() + b"\n")
    _feed(data, lambda text: digest.update(text.encode()))
    return digest.digest()
