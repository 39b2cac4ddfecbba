# Secrets masked in text that came from outside (a provider's or an MCP server's error, a tool's result, an
# answer Telegram or a speech service gave): every configured secret wherever it stands, and any Authorization,
# Bearer or API-key value, shown as the console shows a secret. The one masking function; bounded work. Loaded at
# the first tool call or failure.
from mimi import settings
from mimi.platform import const

_SECRET_MIN = const(6)  # a configured secret shorter than this is masked only where it is the whole text
_REACH = const(512)  # characters read past a cut, so a key across it is masked whole before the cut
_WINDOW = const(256)  # characters lowered at a time while a marker is looked for (no lowered copy of the text)
_SEPARATORS_MAX = const(4)  # characters between a marker and its value: ': ', '": "', '=', ' '
_SCHEME_ROOM = const(16)  # characters of a scheme word ("Bearer") and the spaces after it, read past those
_VALUE_MIN = const(8)  # a marker's value at least this long with a digit in it is taken for a key...
_PLAIN_MIN = const(16)  # ... and at least this long, digits or not
# What a request's credential is written after, lowercase: "Authorization: Bearer <key>", "x-api-key: <key>",
# "?api_key=<key>"; a scheme word after "Authorization" is skipped to reach the credential itself.
_MARKERS = ("authorization", "bearer", "api-key", "api_key")
_SCHEMES = ("bearer", "basic", "token", "digest")
_SEPARATORS = " :=\"'"
_ENDS = " \t\r\n\"',;)]}<>&"
_MASKED = "\u2026"  # settings.mask's ellipsis: a value already masked is left as it is


def secrets(config, more=()):
    """The values to hide: every secret setting that is set (API keys, tokens, passwords; the settings' table),
    then `more` (secrets kept elsewhere: an MCP server's token in mcp.json), longest first."""
    found = []
    for ns, key in settings.secret_names():
        value = config.get(ns, key)
        if value:
            found.append(str(value))
    for value in more:
        if value and isinstance(value, str):
            found.append(value)
    found.sort(key=len, reverse=True)  # a secret inside a longer one is masked with the longer one
    return found


def of_app(app):
    """secrets() of a running board: its settings' and its MCP servers' tokens (the client is made whenever
    mcp.json lists a server); () for a board without settings (a tool run alone)."""
    config = getattr(app, "config", None)
    if config is None:
        return ()
    client = getattr(app, "mcp_client", None)
    return secrets(config, [server.get("token") for server in client.store.servers] if client is not None else ())


def outside(text, secrets, limit=None):
    """text, which came from outside the board, with each of `secrets` and any credential after a marker
    (_MARKERS) masked (settings.mask: never the whole of it); then cut to `limit` characters. A text longer than
    limit is read only to limit plus the longest secret (or _REACH): masked first, then cut, so no secret is
    ever cut in half with one half shown."""
    if not isinstance(text, str):
        text = str(text)  # never str() of a str: MicroPython copies it (a long result held twice)
    if limit is not None and len(text) > limit:
        reach = _REACH
        for secret in secrets:
            reach = max(reach, len(secret))
        text = text[: limit + reach]
    for secret in secrets:
        if text == secret or (len(secret) >= _SECRET_MIN and secret in text):
            text = text.replace(secret, settings.mask(secret))
    text = _credentials_masked(text)
    return text if limit is None else text[:limit]


def _credentials_masked(text):
    """text with the value after each marker masked where it looks like a key (_looks_like_key)."""
    at = 0
    while True:
        found, marker = _next_marker(text, at)
        if found < 0:
            return text
        start = _value_start(text, found + len(marker))
        if start < 0:
            at = found + len(marker)
            continue
        end = _value_end(text, start)
        value = text[start:end]
        if _looks_like_key(value):
            shown = settings.mask(value)
            text = text[:start] + shown + text[end:]
            end = start + len(shown)
        at = end


def _next_marker(text, at):
    """(where, marker) of the first marker at or after `at`, in any case; (-1, None) when there is none."""
    longest = 0
    for marker in _MARKERS:
        longest = max(longest, len(marker))
    size = len(text)
    while at < size:
        piece = text[at : at + _WINDOW + longest].lower()
        best, which = -1, None
        for marker in _MARKERS:
            where = piece.find(marker)
            if 0 <= where < _WINDOW and (best < 0 or where < best):  # one starting later is the next window's
                best, which = where, marker
        if best >= 0:
            return at + best, which
        at += _WINDOW
    return -1, None


def _value_start(text, after):
    """Where the value after a marker ending at `after` starts (past ': ' and a scheme word), or -1 when the
    marker is part of a word (x_authorization_token) or stands alone."""
    head = text[after : after + _SEPARATORS_MAX + _SCHEME_ROOM]
    skip = 0
    while skip < len(head) and skip < _SEPARATORS_MAX and head[skip] in _SEPARATORS:
        skip += 1
    if not skip:
        return -1
    rest = head[skip:]
    for scheme in _SCHEMES:
        if rest[: len(scheme)].lower() == scheme and rest[len(scheme) : len(scheme) + 1] == " ":
            skip += len(scheme) + 1
            while skip < len(head) and head[skip] == " ":
                skip += 1
            break
    return after + skip


def _value_end(text, start):
    """Where the value starting at `start` ends: at the first space, quote or bracket (read a window at a time)."""
    end = start
    while True:
        piece = text[end : end + _WINDOW]
        if not piece:
            return end
        for i, ch in enumerate(piece):
            if ch in _ENDS:
                return end + i
        end += len(piece)


def _looks_like_key(value):
    """A credential rather than a word: long, or long enough with a digit; never one masked already."""
    if _MASKED in value or len(value) < _VALUE_MIN:
        return False
    if len(value) >= _PLAIN_MIN:
        return True
    for ch in value:
        if "0" <= ch <= "9":
            return True
    return False
