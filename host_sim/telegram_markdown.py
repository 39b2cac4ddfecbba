# Telegram's MarkdownV2 and legacy Markdown parse modes: text to (plain text, entities), strictly.
from host_sim.telegram_html import EntityParseError, byte_offset, utf16_len

RESERVED_V2 = "_*[]()~`>#+-=|{}.!"
_V2_MARKERS = {"*": "bold", "_": "italic", "__": "underline", "~": "strikethrough",
               "||": "spoiler"}
_V2_NAMES = {"bold": "Bold", "italic": "Italic", "underline": "Underline",
             "strikethrough": "Strikethrough", "spoiler": "Spoiler", "text_link": "TextUrl",
             "code": "Code", "pre": "Pre"}
_LEGACY_MARKERS = {"*": "bold", "_": "italic"}


class _Out:
    """Plain text being built, with its length in UTF-16 units (the entity unit)."""

    def __init__(self):
        self.parts, self.position, self.entities = [], 0, []

    def add(self, text):
        self.parts.append(text)
        self.position += utf16_len(text)

    def entity(self, kind, start, **extra):
        if self.position > start:
            entity = {"type": kind, "offset": start, "length": self.position - start}
            entity.update(extra)
            self.entities.append(entity)

    def result(self):
        self.entities.sort(key=lambda e: (e["offset"], -e["length"]))
        return "".join(self.parts), self.entities


def _unclosed(kind, text, at):
    return EntityParseError("Can't find end of {} entity at byte offset {}".format(
        _V2_NAMES[kind], byte_offset(text, at)))


def _code_v2(text, i, out):
    """`code` or ```pre```: only ` and \\ are escaped inside. Returns the index after it."""
    fence = "```" if text.startswith("```", i) else "`"
    j, start, body = i + len(fence), out.position, []
    language = None
    if fence == "```":
        line_end = text.find("\n", j)
        first = text[j:line_end] if line_end >= 0 else ""
        if first and all(c.isalnum() or c in "-_+#" for c in first):
            language, j = first, line_end + 1
    while j < len(text):
        if text[j] == "\\" and j + 1 < len(text):
            body.append(text[j + 1])
            j += 2
        elif text.startswith(fence, j):
            out.add("".join(body))
            kind = "code" if fence == "`" else "pre"
            out.entity(kind, start, **({"language": language} if language else {}))
            return j + len(fence)
        else:
            body.append(text[j])
            j += 1
    raise _unclosed("code" if fence == "`" else "pre", text, i)


def _link_target(text, i, opened):
    """The URL of `](url)` at text[i] == ']'; returns (url, index after ')')."""
    if not text.startswith("](", i):
        raise EntityParseError("Can't find end of a url at byte offset {}".format(
            byte_offset(text, opened)))
    j, url = i + 2, []
    while j < len(text) and text[j] != ")":
        if text[j] == "\\" and j + 1 < len(text):
            j += 1
        url.append(text[j])
        j += 1
    if j >= len(text):
        raise EntityParseError("Can't find end of a url at byte offset {}".format(
            byte_offset(text, i)))
    return "".join(url), j + 1


def parse_markdown_v2(text):
    """(plain text, entities) for MarkdownV2; every reserved character must be escaped."""
    out, stack, i = _Out(), [], 0
    at_line_start, quote = True, None
    while i < len(text):
        c = text[i]
        if at_line_start and c == ">":
            if quote is None:
                quote = out.position
            i += 1
            at_line_start = False
            continue
        if at_line_start and quote is not None:
            out.entity("blockquote", quote)
            quote = None
        at_line_start = c == "\n"
        if c == "\\":
            if i + 1 >= len(text) or not 0 < ord(text[i + 1]) < 127:
                raise EntityParseError("Character '\\' is reserved and must be escaped with "
                                       "the preceding '\\'")
            out.add(text[i + 1])
            i += 2
            continue
        if c == "`":
            i = _code_v2(text, i, out)
            continue
        marker = "__" if text.startswith("__", i) else "||" if text.startswith("||", i) else c
        if marker in _V2_MARKERS:
            kind = _V2_MARKERS[marker]
            if stack and stack[-1][0] == kind:
                _, start, _ = stack.pop()
                out.entity(kind, start)
            else:
                stack.append((kind, out.position, i))
            i += len(marker)
            continue
        if c == "[":
            stack.append(("text_link", out.position, i))
            i += 1
            continue
        if c == "]" and stack and stack[-1][0] == "text_link":
            _, start, opened = stack.pop()
            url, i = _link_target(text, i, opened)
            out.entity("text_link", start, url=url)
            continue
        if c in RESERVED_V2:
            raise EntityParseError("Character '{}' is reserved and must be escaped with the "
                                   "preceding '\\'".format(c))
        out.add(c)
        i += 1
    if stack:
        kind, _, opened = stack[-1]
        raise _unclosed(kind, text, opened)
    if quote is not None:
        out.entity("blockquote", quote)
    return out.result()


def parse_markdown(text):
    """(plain text, entities) for the legacy Markdown mode: *bold* _italic_ `code` ```pre```
    [text](url), no nesting."""
    out, i = _Out(), 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in "_*`[":
            out.add(text[i + 1])
            i += 2
            continue
        if c not in "_*`[":
            out.add(c)
            i += 1
            continue
        fence = "```" if text.startswith("```", i) else "]" if c == "[" else c
        end = text.find(fence, i + len(fence) if fence != "]" else i + 1)
        if end < 0:
            raise EntityParseError("Can't find end of the entity starting at byte offset {}"
                                   .format(byte_offset(text, i)))
        start = out.position
        if fence == "]":
            if not text.startswith("](", end) or text.find(")", end) < 0:
                raise EntityParseError("Can't find end of the entity starting at byte offset "
                                       "{}".format(byte_offset(text, i)))
            close = text.find(")", end)
            out.add(text[i + 1:end])
            out.entity("text_link", start, url=text[end + 2:close])
            i = close + 1
            continue
        out.add(text[i + len(fence):end])
        kind = _LEGACY_MARKERS.get(fence) or ("code" if fence == "`" else "pre")
        out.entity(kind, start)
        i = end + len(fence)
    return out.result()
