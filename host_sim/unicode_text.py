# What the real services check of text: a string in parsed JSON must be valid Unicode.


def holds_surrogate(value):
    """True when a string (key or value) in parsed JSON holds a UTF-16 surrogate half: "\\ud83c"
    alone is valid JSON syntax, but not text that UTF-8 can carry."""
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(holds_surrogate(k) or holds_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_surrogate(v) for v in value)
    return False
