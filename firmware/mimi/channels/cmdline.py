# Console command lines: words, quoted arguments, prose taken verbatim, and the nearest command name.
from mimi.platform import const

_NAME_MAX = const(40)  # longer words are never compared (and cost no time)
_QUOTES = "\"'"


def split_args(line, prose_at=-1):
    """Split a command line on spaces; "double" or 'single' quotes keep spaces, \\ escapes in "".

    prose_at >= 0: once that many words are taken, the rest of the line is one last argument,
    verbatim (apostrophes, quotes and # kept; only its ends trimmed). A rest that is one quoted
    string as a whole loses its quotes, as it always did: memory_write "I like tea."
    """
    args, current, quote, has_arg, i = [], [], None, False, 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"' and i + 1 < len(line):
                i += 1
                current.append(line[i])
            elif ch == quote:
                quote = None
            else:
                current.append(ch)
        elif ch in " \t":
            if has_arg or current:
                args.append("".join(current))
                current, has_arg = [], False
        elif not (has_arg or current) and len(args) == prose_at:
            args.append(_unquoted(line[i:].strip()))
            return args
        elif ch in _QUOTES:
            quote, has_arg = ch, True
        else:
            current.append(ch)
        i += 1
    if quote:
        raise ValueError("unclosed quote")
    if has_arg or current:
        args.append("".join(current))
    return args


def _unquoted(rest):
    if len(rest) < 2 or rest[0] not in _QUOTES or rest[-1] != rest[0]:
        return rest
    try:
        words = split_args(rest)
    except ValueError:  # "a "b": not one quoted string
        return rest
    return words[0] if len(words) == 1 else rest


def params_of(usage):
    """How many arguments a usage line names: "tool_exec <name> [json]" -> 2."""
    return len(usage.split()) - 1


def distance(a, b):
    """Edits (insert, delete, change, swap two neighbours) that turn a into b."""
    before, row = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        nxt = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            nxt[j] = min(row[j] + 1, nxt[j - 1] + 1, row[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                nxt[j] = min(nxt[j], before[j - 2] + 1)
        before, row = row, nxt
    return row[len(b)]


def nearest(word, names):
    """The command names a mistyped word most likely meant (sorted; empty when none is close)."""
    word = word.lower()
    if not word or len(word) > _NAME_MAX:
        return []
    allowed = 1 if len(word) <= 5 else 2  # "hello" is not a typo of help
    best, found = allowed, []
    for name in names:
        d = distance(word, name)
        if d < best or (d == best and not found):
            best, found = d, [name]
        elif d == best:
            found.append(name)
    if not found:  # a start of a name: "wifi" -> wifi_set, wifi_status
        found = [name for name in names if len(word) >= 3 and name.startswith(word)]
    return sorted(found)
