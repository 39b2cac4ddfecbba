# HTML reduced to readable text as it streams in: no scripts or styles, blocks as lines, entities decoded.
from mimi.platform import const

_DEFAULT_LIMIT = const(7500)  # characters of text kept; then the reducer reports full
_TAG_MAX = const(1024)  # a tag longer than this (a huge data: URI) is skipped, not held
TITLE_MAX = const(200)
_ENTITY_MAX = const(12)  # the longest "&name;" looked for

# Elements whose content is never text for a reader.
SKIPPED = ("script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "math")
# Elements that start a new paragraph (blank line) or a new line.
PARAGRAPHS = ("p", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl", "pre", "blockquote",
              "section", "article", "header", "footer", "nav", "aside", "main", "form", "figure", "hr")
LINES = ("br", "div", "tr", "dt", "dd", "li", "caption", "figcaption", "address", "details", "summary",
         "fieldset", "legend", "option", "label")

_NAMED = {
    "amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "nbsp": " ", "ensp": " ", "emsp": " ",
    "thinsp": " ", "shy": "", "zwnj": "", "zwj": "", "copy": "\u00a9", "reg": "\u00ae", "trade": "\u2122",
    "hellip": "\u2026", "mdash": "\u2014", "ndash": "\u2013", "minus": "\u2212", "lsquo": "\u2018",
    "rsquo": "\u2019", "sbquo": "\u201a", "ldquo": "\u201c", "rdquo": "\u201d", "bdquo": "\u201e",
    "laquo": "\u00ab", "raquo": "\u00bb", "middot": "\u00b7", "bull": "\u2022", "euro": "\u20ac",
    "pound": "\u00a3", "yen": "\u00a5", "cent": "\u00a2", "deg": "\u00b0", "times": "\u00d7",
    "divide": "\u00f7", "plusmn": "\u00b1", "para": "\u00b6", "sect": "\u00a7", "frac12": "\u00bd",
    "frac14": "\u00bc", "frac34": "\u00be", "micro": "\u00b5", "larr": "\u2190", "rarr": "\u2192",
    "uarr": "\u2191", "darr": "\u2193", "auml": "\u00e4", "ouml": "\u00f6", "uuml": "\u00fc",
    "Auml": "\u00c4", "Ouml": "\u00d6", "Uuml": "\u00dc", "szlig": "\u00df", "eacute": "\u00e9",
    "egrave": "\u00e8", "aacute": "\u00e1", "agrave": "\u00e0", "ccedil": "\u00e7", "ntilde": "\u00f1",
    "oacute": "\u00f3", "iacute": "\u00ed", "uacute": "\u00fa", "Eacute": "\u00c9",
}

# Reader modes
_TEXT = const(0)
_SKIP = const(1)  # inside a SKIPPED element, looking for its end tag
_COMMENT = const(2)
_LONG_TAG = const(3)  # inside an over-long tag, looking for its ">"

# Pending separator before the next word
_NONE = const(0)
_SPACE = const(1)
_LINE = const(2)
_PARAGRAPH = const(3)
_SEPARATORS = ("", " ", "\n", "\n\n")


def _entity(name):
    if name.startswith("#"):
        try:
            code = int(name[2:], 16) if name[1:2] in ("x", "X") else int(name[1:])
        except ValueError:
            return None
        if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000:
            return " " if code == 0xA0 else chr(code)
        return None
    return _NAMED.get(name)


def decode_entities(text):
    """'&amp;', '&#233;', '&#x2019;' and the common named entities decoded; unknown ones left as they are."""
    if "&" not in text:
        return text
    out = []
    i = 0
    while True:
        j = text.find("&", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find(";", j + 1, j + _ENTITY_MAX)
        found = _entity(text[j + 1 : k]) if k > j + 1 else None
        if found is None:
            out.append("&")
            i = j + 1
        else:
            out.append(found)
            i = k + 1


def _tag_name(inside):
    """'a href=x' -> 'a'; '/P' -> 'p' (the slash is the caller's business)."""
    end = 0
    while end < len(inside) and inside[end] not in " \t\r\n/>":
        end += 1
    return inside[:end].lower()


class HtmlText:
    """feed(str) pieces of a page, then text(); stops taking text once `limit` characters are kept."""

    def __init__(self, limit=_DEFAULT_LIMIT):
        self.limit = limit
        self.full = False  # the text reached the limit: the caller may stop reading
        self._title = ""
        self._parts = []
        self._size = 0
        self._gap = _NONE
        self._pending = ""  # an unfinished tag, entity or end-tag candidate from the last piece
        self._mode = _TEXT
        self._skip_end = ""  # "</script" while skipping a script
        self._in_title = False
        self._pre = 0  # depth of <pre>: whitespace kept as is

    def feed(self, piece):
        if self.full:
            return
        buf = self._pending + piece if self._pending else piece
        self._pending = ""
        i, n = 0, len(buf)
        while i < n and not self.full:
            if self._mode == _SKIP:
                j = buf[i:].lower().find(self._skip_end)
                if j < 0:  # keep what could be the start of the end tag
                    self._pending = buf[max(i, n - len(self._skip_end)) :]
                    return
                i, self._mode = i + j, _TEXT  # the end tag itself is read as a tag
            elif self._mode == _COMMENT:
                j = buf.find("-->", i)
                if j < 0:
                    self._pending = buf[max(i, n - 2) :]
                    return
                i, self._mode = j + 3, _TEXT
            elif self._mode == _LONG_TAG:
                j = buf.find(">", i)
                if j < 0:
                    return
                i, self._mode = j + 1, _TEXT
            else:
                i = self._text_then_tag(buf, i, n)

    def _text_then_tag(self, buf, i, n):
        """Consume text up to the next tag and the tag itself; return where to go on."""
        j = buf.find("<", i)
        if j < 0:
            end = n
            amp = buf.rfind("&", max(i, n - _ENTITY_MAX))
            if amp >= 0 and buf.find(";", amp) < 0:  # an entity may continue in the next piece
                end = amp
            self._text(buf[i:end])
            self._pending = buf[end:]
            return n
        if j > i:
            self._text(buf[i:j])
        if n - j < 4:  # too short to tell "<!--" from a tag
            self._pending = buf[j:]
            return n
        if buf.startswith("<!--", j):
            self._mode = _COMMENT
            return j + 4
        follower = buf[j + 1]
        if not (follower.isalpha() or follower in "/!?"):
            self._text("<")  # "a < b" is text
            return j + 1
        k = buf.find(">", j)
        if k < 0:
            if n - j > _TAG_MAX:
                self._mode = _LONG_TAG
            else:
                self._pending = buf[j:]
            return n
        self._tag(buf[j + 1 : k])
        return k + 1

    def _tag(self, inside):
        if inside[:1] in "!?":  # <!DOCTYPE>, <?xml?>, <![CDATA[
            return
        closing = inside.startswith("/")
        name = _tag_name(inside[1:] if closing else inside)
        if name == "title":
            self._in_title = not closing and not inside.endswith("/")
        elif name in SKIPPED:
            if not closing and not inside.endswith("/"):
                self._mode, self._skip_end = _SKIP, "</" + name
        elif name == "pre":
            self._pre = max(0, self._pre + (-1 if closing else 1))
            self._break(_PARAGRAPH)
        elif name in PARAGRAPHS:
            self._break(_PARAGRAPH)
        elif name in LINES:
            self._break(_LINE)
            if name == "li" and not closing:
                self._word("-")
                self._gap = _SPACE
        elif name in ("td", "th") and not closing and self._size and self._gap < _LINE:
            self._gap = max(self._gap, _SPACE)
            self._word("|")  # cells of one row as "a | b"
            self._gap = _SPACE

    def _break(self, level):
        if self._size:
            self._gap = max(self._gap, level)

    def _text(self, raw):
        if not raw:
            return
        text = decode_entities(raw).replace("\xa0", " ")
        if self._in_title:
            self._title = (self._title + text)[: 2 * TITLE_MAX]
            return
        if self._pre:
            if self._size and self._gap:
                self._put(_SEPARATORS[self._gap])
            self._gap = _NONE
            self._put(text)
            return
        if text[:1].isspace():
            self._gap = max(self._gap, _SPACE)
        words = text.split()
        for index in range(len(words)):
            if index:
                self._gap = max(self._gap, _SPACE)
            self._word(words[index])
        if text[-1:].isspace():
            self._gap = max(self._gap, _SPACE)

    def _word(self, word):
        if self._size and self._gap:
            self._put(_SEPARATORS[self._gap])
        self._gap = _NONE
        self._put(word)

    def _put(self, text):
        room = self.limit - self._size
        if len(text) > room:
            text = text[:room]
            self.full = True
        if text:
            self._parts.append(text)
            self._size += len(text)

    def close(self):
        """The end of the page: a held back partial entity is text; a cut-off tag is dropped."""
        if self._mode == _TEXT and self._pending and not self._pending.startswith("<"):
            self._text(self._pending)
        self._pending = ""

    @property
    def title(self):
        return " ".join(self._title.split())[:TITLE_MAX]

    def text(self):
        """The readable text so far, as one string."""
        return "".join(self._parts)


def strip_tags(fragment):
    """A short HTML fragment (a search snippet with <strong>) as plain one-line text."""
    reducer = HtmlText(len(fragment) + 1)
    reducer.feed(fragment)
    reducer.close()
    return " ".join(reducer.text().split())
