# Splitting text for Telegram: at most 4096 code points a message, cut where a reader expects it.
from mimi.platform import const

MESSAGE_LIMIT = const(4096)  # code points of one Telegram message after entity parsing
_JOIN_BACKOFF = const(8)  # a hard cut moves back at most this far to keep an emoji sequence whole


def visible_length(html):
    """Code points of the text Telegram keeps from this HTML: tags dropped, each entity one."""
    count = 0
    in_tag = in_entity = False
    for ch in html:
        if in_tag:
            in_tag = ch != ">"
        elif in_entity:
            in_entity = ch != ";"
        elif ch == "<":
            in_tag = True
        else:
            in_entity = ch == "&"
            count += 1
    return count


def _joins(ch):
    """A character that belongs to the one before it (joiner, variation selector, skin tone...)."""
    code = ord(ch)
    return (code in (0x200D, 0xFE0E, 0xFE0F, 0x20E3) or 0x0300 <= code <= 0x036F
            or 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F)


def _regional(ch):
    """A regional indicator: two of them make one flag."""
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _inside_sequence(text, at, start=0):
    """True when a cut before text[at] would break a character sequence (emoji, flag, combining);
    text[start:] begins at a sequence boundary."""
    if at <= start or at >= len(text):
        return False
    if _joins(text[at]) or text[at - 1] == "\u200d":
        return True
    if _regional(text[at]) and _regional(text[at - 1]):
        run = 0  # regional indicators pair up from the start of their run
        for ch in text[start:at]:  # one slice walked forward: indexing a str is slow on MicroPython
            run = run + 1 if _regional(ch) else 0
        return run % 2 == 1
    return False


def tail(text, limit):
    """The last at most limit code points of text, starting where a character sequence starts."""
    if len(text) <= limit:
        return text
    start = len(text) - limit
    for _ in range(_JOIN_BACKOFF):
        if not _inside_sequence(text, start):
            break
        start += 1
    return text[start:]


def _cut(text, start, limit):
    """(where to cut, the separator dropped there) for text[start:] longer than limit."""
    end = start + limit
    for sep in ("\n\n", "\n", " "):
        # a separator in the first half would leave a part too short
        at = text.rfind(sep, start + limit // 2, end + len(sep))
        if at >= 0:
            return at, sep
    for _ in range(_JOIN_BACKOFF):
        if end > start + 1 and _inside_sequence(text, end, start):
            end -= 1
    return end, ""


def split(text, limit=MESSAGE_LIMIT):
    """Parts of at most limit code points, cut at paragraph, line or word breaks when possible.

    text is a str or its pieces (a streamed reply's llm/text.py Text): pieces are joined only up to a
    window of about one part, so a long reply never needs a hole of its whole size. The whitespace at a
    cut is dropped; no part is empty or only whitespace.
    """
    if limit < 1:
        raise ValueError("message split limit must be at least 1")
    pieces = iter((text,) if isinstance(text, str) else text)
    parts = []
    window, skip = "", None  # the text not yet cut; the separator whose repeats still start it
    more = True
    while True:
        while more and len(window) <= limit + 2:  # a cut looks at most 2 characters past the limit
            piece = next(pieces, None)
            if piece is None:
                more = False
                break
            if skip and not window:
                piece = piece.lstrip(skip)
                if not piece:
                    continue
            skip = None
            window = window + piece if window else piece
        if len(window) <= limit:
            break
        at, sep = _cut(window, 0, limit)
        part = window[:at].rstrip()
        if part:
            parts.append(part)
        start, size = at + len(sep), len(window)
        while sep and start < size and window.startswith(sep[0], start):
            start += 1
        window = window[start:]
        skip = sep[:1] if sep and not window else None
    if window.strip():
        parts.append(window)
    return parts
