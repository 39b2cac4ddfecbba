# The values a setting may take, checked (the settings table's row: its kind, range or words), loaded when a setting
# is set or overridden, not at boot. The kinds are the table's own words: a kind with a rule of its own (a token, a
# model profile, a URL, roles) is checked here, and a key's shape in a setting that is not secret, so every path that
# writes a setting (console, config_set, the web app, MCP, provisioning) runs the same check.
from mimi.platform import const

_INT, _URL, _IDS, _TOKEN, _ROLES, _PROFILE = "int", "url", "ids", "token", "roles", "profile"
_TOKEN_MIN = const(8)
_TOKEN_MAX = const(128)
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
# A key's shape (looks_like_key): a word that starts with a provider's key prefix and goes on for 16 characters or
# more, a Telegram bot token (digits, ':', 30 characters or more), or a run of 32 or more ASCII letters and digits
# holding both. Model names, hosts, ids and tool names are not shaped so; a key pasted into their slot is.
_KEY_PREFIXES = ("sk-", "gsk_", "xai-", "hf_", "ghp_", "gho_", "github_pat_", "glpat-", "xoxb-", "xoxp-", "AIza",
                 "tvly-", "eyJ")
_KEY_PREFIX_REST = const(16)
_BOT_ID_MIN = const(6)
_BOT_SECRET_MIN = const(30)
_KEY_RUN = const(32)


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


def checked(name, kind, low, high, value, limit, secret=False):
    """The value to store for the setting `name` (int or str), or a ValueError/TypeError that never quotes a
    secret. kind: the table's int, text, url or ids; low and high: an int's range, or a text's words ('a|b');
    secret: the setting is one (any other refuses a value shaped like a key: it would be shown in clear)."""
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
    if not secret and looks_like_key(value):
        raise ValueError("{} is not a secret setting and that looks like a key: not saved (it would be shown in "
                         "clear; a key goes in its own setting)".format(name))
    if kind == _ROLES:  # low: the roles ("id=role,id=role")
        return _roles(name, value, low)
    words = low
    if words and value.lower() not in words.split("|"):
        last = words.rfind("|")
        raise ValueError("{} must be {} or {}, not '{}'".format(name, words[:last].replace("|", ", "),
                                                               words[last + 1:], value))
    value = value.lower() if words else value
    if kind == _URL and value:
        from mimi import url

        try:
            url.parse(value)
        except ValueError as exc:
            raise ValueError("{} {}".format(name, exc))
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


def looks_like_key(text):
    """Is a word of the text shaped like an API key or a token (see _KEY_PREFIXES)?"""
    for word in text.replace(",", " ").split():
        for prefix in _KEY_PREFIXES:
            if word.startswith(prefix) and len(word) >= len(prefix) + _KEY_PREFIX_REST:
                return True
        bot, colon, secret = word.partition(":")
        if colon and len(bot) >= _BOT_ID_MIN and _all_digits(bot) and len(secret) >= _BOT_SECRET_MIN:
            return True
    run = letters = digits = 0
    for ch in text + " ":
        if "0" <= ch <= "9":
            run, digits = run + 1, digits + 1
        elif "a" <= ch <= "z" or "A" <= ch <= "Z":
            run, letters = run + 1, letters + 1
        elif run >= _KEY_RUN and letters and digits:
            return True
        else:
            run = letters = digits = 0
    return False


def moved(kind, before, after):
    """Did a URL setting (a model profile: its URL) leave its origin, scheme, host and port, for another or for
    none? The key that belongs to it is dropped then (settings/__init__.py). A key given before any URL stays with
    the first."""
    from mimi import url

    if kind == _PROFILE:
        before, after = _url_word(before), _url_word(after)
    was = url.origin(before)
    return was is not None and was != url.origin(after)


def _url_word(line):
    words = line.split()
    return words[2] if len(words) > 2 else ""


def _roles(name, value, words):
    """Telegram users' roles, 'id=role,id=role', each role one of the row's words."""
    roles = words.split("|")
    parts = [part.strip().lower() for part in value.split(",")]
    for part in parts:
        user, sep, role = part.partition("=")
        if not sep or not user or not _all_digits(user) or role not in roles:
            raise ValueError("{} must be user ids with their roles, like 12345=owner,67890=observer (roles: {})"
                             .format(name, ", ".join(roles)))
    return ",".join(parts)


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
    _PROFILE: lambda p: p.check_line,
}
