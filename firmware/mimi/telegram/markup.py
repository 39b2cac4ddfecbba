# Claude's Markdown to Telegram HTML (balanced even for a cut-off draft) and message splitting.
from mimi.platform import const
from mimi.telegram.split import MESSAGE_LIMIT, split, tail, visible_length  # noqa: F401  (re-exported)

_TEXT_CHUNK = const(128)  # characters gathered one by one before they are joined into one piece

_TAGS = {"*": "i", "_": "i", "**": "b", "__": "b", "~~": "s"}
# a run of delimiter characters -> the markers it opens, outermost first
_RUNS = {"*": ("*",), "**": ("**",), "***": ("**", "*"), "_": ("_",), "__": ("__",),
         "___": ("__", "_"), "~~": ("~~",)}
_ESCAPABLE = "\\`*_{}[]()#+-.!~>|<"
_URL_SCHEMES = ("http://", "https://", "tg://")
_LANGUAGE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+#.-"
_RULE = "\u2014\u2014\u2014"  # no longer than the shortest Markdown rule: visible text never grows


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Characters that count as blank: an entity holding only these is "empty" and refused by Telegram.
_UNICODE_SPACES = ("\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029"
                   "\u202f\u205f\u3000")


def _is_space(ch):
    return ch <= " " or ch in _UNICODE_SPACES


def _is_word(ch):
    # every non-ASCII character counts as a letter: MicroPython's isalpha() only knows ASCII
    return ch.isalpha() or ch.isdigit() or ch > "\x7f"


def _safe_url(url):
    low = url.lower()
    return any(low.startswith(scheme) and len(url) > len(scheme) for scheme in _URL_SCHEMES)


class _Inline:
    """Renders the inline Markdown of one line; a marker without its partner stays literal text."""

    def __init__(self):
        self.out = []  # rendered pieces; an opener's piece holds its literal marker until matched
        self.stack = []  # unmatched openers: (marker, index of its piece in out)
        self.text = []  # escaped characters not yet moved into out
        self.prev = " "  # the character before the current one; line edges count as spaces
        self.run = ""  # a pending run of * _ or ~, resolved once the next character is known
        self.run_prev = " "
        self.url = None  # characters of a link target after "](", else None
        self.depth = 0  # unclosed "(" inside that target
        self.bracket = False  # just after "]": a "(" would start a link target
        self.escaped = False  # just after a backslash

    def render(self, line):
        for is_code, piece in _code_spans(line):
            if is_code:
                self._settle("`")
                self._flush()
                self.out.extend(("<code>", _escape(piece), "</code>"))
                self.prev = "`"
            else:
                for ch in piece:
                    self._char(ch)
        self._settle(" ")
        self._flush()
        return "".join(self.out)

    def _settle(self, nxt):
        """Resolve what waits for the next character; nxt stands for what follows."""
        if self.url is not None:
            self._abort_url()
        if self.bracket:
            self.bracket = False
            self._literal("]")
        if self.run:
            self._delimiters(nxt)
        if self.escaped:
            self.escaped = False
            self._literal("\\")

    def _char(self, ch):
        if self.url is not None:
            if ch == ")" and self.depth == 0:
                self._end_link()
                return
            if not _is_space(ch):
                self.depth += (ch == "(") - (ch == ")")
                self.url.append(ch)
                return
            self._abort_url()
        if self.bracket:
            self.bracket = False
            if ch == "(":
                self.url, self.depth = [], 0
                return
            self._literal("]")
        if self.run:
            if ch == self.run[0]:
                self.run += ch
                return
            self._delimiters(ch)
        if self.escaped:
            self.escaped = False
            if ch in _ESCAPABLE:
                self._literal(ch)
                return
            self._literal("\\")
        if ch in "*_~":
            self.run, self.run_prev = ch, self.prev
        elif ch == "\\":
            self.escaped = True
        elif ch == "[":
            self._open("[")
        elif ch == "]":
            self.bracket = True
        else:
            self._literal(ch)

    def _literal(self, ch):
        self.text.append(_escape(ch) if ch in "&<>" else ch)
        self.prev = ch
        if len(self.text) >= _TEXT_CHUNK:
            self._flush()

    def _literal_text(self, text):
        for ch in text:
            self._literal(ch)

    def _flush(self):
        if self.text:
            self.out.append("".join(self.text))
            self.text = []

    def _open(self, marker):
        self._flush()
        self.stack.append((marker, len(self.out)))
        self.out.append(marker)
        self.prev = marker[0]

    def _find(self, marker):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == marker:
                return k
        return -1

    def _wrap(self, k, start_tag, end_tag):
        """Turn opener k into start_tag and close it here; openers above it stay literal."""
        index = self.stack[k][1]
        del self.stack[k:]
        self.out[index] = start_tag
        self.out.append(end_tag)

    def _delimiters(self, nxt):
        run, prev = self.run, self.run_prev
        self.run = ""
        markers = _RUNS.get(run)
        if markers is None:
            self._literal_text(run)
            return
        self._flush()
        if not _is_space(prev) and not _is_word(nxt):
            closed = 0
            for marker in sorted(markers, key=self._find, reverse=True):  # innermost first
                k = self._find(marker)
                if k >= 0 and self.stack[k][1] < len(self.out) - 1:  # never an empty element
                    tag = _TAGS[marker]
                    self._wrap(k, "<" + tag + ">", "</" + tag + ">")
                    closed += len(marker)
            if closed:
                self._literal_text(run[closed:])
                self.prev = run[0]
                return
        if not _is_space(nxt) and not _is_word(prev):
            for marker in markers:
                self._open(marker)
            return
        self._literal_text(run)

    def _abort_url(self):
        url, self.url = self.url, None
        self._literal_text("](" + "".join(url))

    def _end_link(self):
        url, self.url = "".join(self.url), None
        self._flush()
        k = self._find("[")
        if k < 0 or not _safe_url(url) or not _shows_text(self.out[self.stack[k][1] + 1:]):
            self._literal_text("](" + url + ")")  # Telegram refuses a link that shows nothing: "[ ](url)"
            return
        index = self.stack[k][1]
        for j in range(index + 1, len(self.out)):
            if self.out[j] in ("<code>", "</code>"):  # Telegram: a link cannot contain code
                self.out[j] = ""
        href = _escape(url).replace('"', "&quot;")
        self._wrap(k, '<a href="' + href + '">', "</a>")
        self.stack = [entry for entry in self.stack if entry[0] != "["]  # no link inside a link
        self.prev = ")"


def _shows_text(pieces):
    """Do the pieces (escaped text and tags) show anything but white space?"""
    for piece in pieces:
        if piece and not piece.startswith("<") and piece.strip():
            return True
    return False


def _code_spans(line):
    """The line as (is_code, text) pieces: n backticks open a span that the next n close."""
    parts = line.split("`")
    tokens = [parts[0]]  # text, run length, text, run length, ..., text
    run = 0
    for part in parts[1:]:
        run += 1
        if part:
            tokens.extend((run, part))
            run = 0
    if run:
        tokens.extend((run, ""))
    pieces, pending, i = [], tokens[0], 1
    while i < len(tokens):
        j = i + 2
        while j < len(tokens) and tokens[j] != tokens[i]:
            j += 2
        code = "".join("`" * t if k % 2 else t for k, t in enumerate(tokens[i + 1:j]))
        if j < len(tokens) and code.strip():
            if len(code) > 2 and code[0] == " " and code[-1] == " ":
                code = code[1:-1]
            pieces.extend(((False, pending), (True, code)))
            pending, i = tokens[j + 1], j + 2
        else:
            pending += "`" * tokens[i] + tokens[i + 1]
            i += 2
    pieces.append((False, pending))
    return pieces


def _inline(text):
    return _Inline().render(text)


def _fence(line):
    """(indent, language) when the line opens a fenced code block, else None."""
    body = line.lstrip(" ")
    if not body.startswith("```"):
        return None
    info = body.lstrip("`")
    if "`" in info:
        return None
    words = info.split()
    language = "".join(ch for ch in words[0] if ch in _LANGUAGE_CHARS) if words else ""
    return len(line) - len(body), language


def _closes_fence(line):
    body = line.strip()
    return len(body) >= 3 and body.strip("`") == ""


def _pre(language, lines):
    code = "\n".join(lines)
    if not code.strip():
        return None
    if language:
        return '<pre><code class="language-{}">{}</code></pre>'.format(language, _escape(code))
    return "<pre>{}</pre>".format(_escape(code))


def _is_rule(body):
    marks = body.replace(" ", "")
    return len(marks) >= 3 and marks[0] in "-*_" and marks == marks[0] * len(marks)


def _block(line):
    """One line outside code blocks and quotes: rule, bullet, heading or plain text."""
    body = line.lstrip(" ")
    if _is_rule(body):
        return _RULE
    if body[:2] in ("- ", "* ", "+ "):
        return line[: len(line) - len(body)] + "\u2022 " + _inline(body[2:])
    if body.startswith("#"):
        level = len(body) - len(body.lstrip("#"))
        title = body[level:].strip()
        if level <= 6 and title and body[level] == " ":
            return "<b>" + _inline(title) + "</b>"
    return _inline(line)


def to_html(markdown):
    """Telegram HTML for Markdown; unmatched markers stay literal, so any prefix renders valid."""
    return _render(markdown)[0]


def _render(markdown):
    """(html, the line that opened a code block left open at the end, else None)."""
    out = []
    fence = opener = None  # (indent, language) and its line, inside a fenced code block
    code = []
    quote = []
    for line in markdown.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if fence is not None:
            if _closes_fence(line):
                out.append(_pre(fence[1], code))
                fence = opener = None
            else:
                indent = fence[0]
                code.append(line[indent:] if line.startswith(" " * indent) else line.lstrip(" "))
            continue
        body = line.lstrip(" ")
        if body.startswith(">"):
            body = body[1:]
            quote.append(_block(body[1:] if body.startswith(" ") else body))
            continue
        if quote:
            out.append(_blockquote(quote))
            quote = []
        fence = _fence(line)
        if fence is not None:
            opener, code = line, []
        else:
            out.append(_block(line))
    if quote:
        out.append(_blockquote(quote))
    if fence is not None:  # a draft stops inside a code block: show it closed
        out.append(_pre(fence[1], code))
    return "\n".join(piece for piece in out if piece is not None), opener


def _blockquote(lines):
    text = "\n".join(lines)
    return "<blockquote>" + text + "</blockquote>" if text.strip() else None


def split_html(markdown, limit=MESSAGE_LIMIT):
    """[(html, plain)] for the parts of markdown; each html shows at most limit code points.

    A code block cut in two is closed in one part and opened again in the next; plain is the
    Markdown of the part, to send instead when Telegram cannot parse the html.
    """
    pairs = []
    reopen = None
    for part in split(markdown, limit):
        html, reopen = _render(part if reopen is None else reopen + "\n" + part)
        size = visible_length(html)
        if size == 0 or size > limit:  # an empty code block (too long cannot happen)
            html = _escape(part)
        pairs.append((html, part))
    return pairs
