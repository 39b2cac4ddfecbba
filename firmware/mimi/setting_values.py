# The values a setting may take, checked (config.py's table row: its kind, range or words), loaded when a setting is set
# or overridden, not at boot. The kinds are the table's own words: a kind with a rule of its own (a token, a
# model profile) is checked here, so every path that writes a setting (console, config_set, the web app, MCP,
# provisioning) runs the same check.
from mimi.platform import const

_INT, _URL, _IDS, _TOKEN = "int", "url", "ids", "token"
_TOKEN_MIN = const(8)
_TOKEN_MAX = const(128)
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


def _whole_number(value):
    """int from an int or decimal text, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    digits = text[1:] if text.startswith("-") else text
    if not digits or not _all_digits(digits):
        return None
    return int(text)


def _all_digits(text):
    for ch in text:
        if ch not in "0123456789":
            return False
    return True


def checked(name, kind, low, high, value, limit):
    """The value to store for the setting `name` (int or str), or a ValueError/TypeError that never quotes a
    secret. kind: the table's int, text, url or ids; low and high: an int's range, or a text's words ('a|b')."""
    if kind == _INT:
        low, high = int(low), int(high)
        number = _whole_number(value)
        if number is None:
            raise ValueError("{} must be a whole number from {} to {}".format(name, low, high))
        if not low <= number <= high:
            raise ValueError("{} must be from {} to {}, not {}".format(name, low, high, number))
        return number
    if not isinstance(value, str):
        raise TypeError("{} must be text".format(name))
    value = value.strip()
    if kind == _TOKEN:  # low: the words it takes besides a token (gw_config.ws_token: off)
        return _token(name, value, low)
    if len(value.encode()) > limit:
        raise ValueError("{} is too long: at most {} bytes".format(name, limit))
    for ch in value:
        if ord(ch) < 32 or ord(ch) == 127:
            raise ValueError("{} must be one line without control characters".format(name))
    words = low
    if words and value.lower() not in words.split("|"):
        last = words.rfind("|")
        raise ValueError("{} must be {} or {}, not '{}'".format(name, words[:last].replace("|", ", "),
                                                               words[last + 1:], value))
    value = value.lower() if words else value
    if kind == _URL and value and not (value.startswith("https://") or value.startswith("http://")):
        raise ValueError("{} must start with https:// or http://".format(name))
    if kind == _IDS and value:
        ids = [part.strip() for part in value.split(",")]
        for part in ids:
            if not part or not _all_digits(part):
                raise ValueError("{} must be user ids separated by commas, like 12345,67890"
                                 .format(name))
        value = ",".join(ids)
    if kind in _PROFILE_KINDS and value:  # model profiles (llm/profiles.py owns their grammar)
        from mimi.llm import profiles

        try:
            value = _PROFILE_KINDS[kind](profiles)(value)
        except ValueError as exc:
            raise ValueError("{}: {}".format(name, exc))
    return value


def _token(name, value, words):
    """A token a client presents (in a URL or a Bearer header): 8 to 128 of A-Z a-z 0-9 - _ . ~, or one of the
    row's words; the error never quotes it."""
    if words and value.lower() in words.split("|"):
        return value.lower()
    ok = _TOKEN_MIN <= len(value) <= _TOKEN_MAX
    for ch in value if ok else "":
        if ch not in _TOKEN_CHARS:
            ok = False
            break
    if not ok:
        raise ValueError("{} must be {} to {} characters of A-Z a-z 0-9 - _ . ~{}".format(
            name, _TOKEN_MIN, _TOKEN_MAX, " (or {})".format(words.replace("|", ", ")) if words else ""))
    return value


# A model profile's settings: a name, a chain of names, a price, a whole profile line.
_PROFILE_KINDS = {
    "name": lambda p: p.check_name,
    "names": lambda p: p.check_names,
    "price": lambda p: lambda text: p.price_text(p.parse_price(text)),
    "profile": lambda p: p.check_line,
}
