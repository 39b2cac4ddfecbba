# Telegram's HTML parse_mode: the supported tag subset to (plain text, entities), as the API does.
NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
SIMPLE_TAGS = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline",
    "ins": "underline", "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
    "tg-spoiler": "spoiler", "code": "code", "pre": "pre",
}
OTHER_TAGS = ("a", "span", "tg-emoji", "blockquote")
_NAME_ENDS = " \t\r\n>/"


class EntityParseError(ValueError):
    """Bad markup; str(exc) is the detail after `can't parse entities: `."""


def utf16_len(text):
    """Entity offsets and lengths are counted in UTF-16 code units by the Bot API."""
    return len(text.encode("utf-16-le")) // 2


def byte_offset(text, index):
    return len(text[:index].encode("utf-8"))


def _entity_at(text, i):
    """(character, next index) for the HTML entity at text[i] == '&'."""
    end = text.find(";", i + 1, i + 12)
    name = text[i + 1:end] if end > 0 else ""
    if name in NAMED_ENTITIES:
        return NAMED_ENTITIES[name], end + 1
    if name.startswith("#") and len(name) > 1:
        digits, base = (name[2:], 16) if name[1] in "xX" else (name[1:], 10)
        try:
            code = int(digits, base)
            if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
                return chr(code), end + 1
        except ValueError:
            pass
    raise EntityParseError("Unsupported HTML entity at byte offset {}".format(
        byte_offset(text, i)))


def _decoded(value):
    """An attribute value with its entities decoded."""
    out, i = [], 0
    while i < len(value):
        if value[i] == "&":
            ch, i = _entity_at(value, i)
            out.append(ch)
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _start_tag(text, i):
    """(name, attributes, index after '>') for the start tag at text[i] == '<'."""
    j = i + 1
    while j < len(text) and text[j] not in _NAME_ENDS:
        j += 1
    name = text[i + 1:j].lower()
    if name not in SIMPLE_TAGS and name not in OTHER_TAGS:
        raise EntityParseError('Unsupported start tag "{}" at byte offset {}'.format(
            name, byte_offset(text, i)))
    attrs = {}
    while True:
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        if j >= len(text):
            raise EntityParseError("Unclosed start tag at byte offset {}".format(
                byte_offset(text, i)))
        if text[j] == ">":
            return name, attrs, j + 1
        k = j
        while k < len(text) and (text[k].isalnum() or text[k] in "-_"):
            k += 1
        if k == j:
            raise EntityParseError("Empty attribute name in the tag \"{}\" at byte offset {}"
                                   .format(name, byte_offset(text, i)))
        key = text[j:k].lower()
        j = k
        value = ""
        if j < len(text) and text[j] == "=":
            j += 1
            if j < len(text) and text[j] in "'\"":
                close = text.find(text[j], j + 1)
                if close < 0:
                    raise EntityParseError("Unclosed start tag at byte offset {}".format(
                        byte_offset(text, i)))
                value, j = _decoded(text[j + 1:close]), close + 1
            else:
                k = j
                while k < len(text) and text[k] not in " \t\r\n>":
                    k += 1
                value, j = _decoded(text[j:k]), k
        attrs[key] = value


def _entity_for(tag, stack, text):
    """The entity dict for a closing tag (without offset/length), or None for no entity."""
    name, attrs = tag["name"], tag["attrs"]
    if name in SIMPLE_TAGS:
        kind = SIMPLE_TAGS[name]
        language = attrs.get("class", "")
        if kind == "code" and language.startswith("language-") and stack \
                and stack[-1]["name"] == "pre" and stack[-1]["start"] == tag["start"]:
            stack[-1]["language"] = language[len("language-"):]
            return None
        if kind == "pre" and tag.get("language"):
            return {"type": "pre", "language": tag["language"]}
        return {"type": kind}
    if name == "a":
        href = attrs.get("href", "")
        if href.startswith("tg://user?id="):
            return {"type": "text_mention", "user": {"id": int(href[13:] or 0)}}
        return {"type": "text_link", "url": href} if href else None
    if name == "span":
        if attrs.get("class") != "tg-spoiler":
            raise EntityParseError('Tag "span" must have class "tg-spoiler" at byte offset {}'
                                   .format(byte_offset(text, tag["at"])))
        return {"type": "spoiler"}
    if name == "tg-emoji":
        if not attrs.get("emoji-id"):
            raise EntityParseError('Tag "tg-emoji" must have attribute "emoji-id" at byte '
                                   "offset {}".format(byte_offset(text, tag["at"])))
        return {"type": "custom_emoji", "custom_emoji_id": attrs["emoji-id"]}
    kind = "expandable_blockquote" if "expandable" in attrs else "blockquote"
    return {"type": kind}


def parse_html(text):
    """(plain text, entities) for `text` in Telegram's HTML; raises EntityParseError."""
    out, entities, stack = [], [], []
    position = 0  # UTF-16 units emitted so far
    i = 0
    while i < len(text):
        c = text[i]
        if c == "&":
            ch, i = _entity_at(text, i)
        elif c != "<":
            ch, i = c, i + 1
        elif text.startswith("</", i):
            close = text.find(">", i)
            if close < 0:
                raise EntityParseError("Unclosed end tag at byte offset {}".format(
                    byte_offset(text, i)))
            name = text[i + 2:close].strip().lower()
            if not stack:
                raise EntityParseError("Unexpected end tag at byte offset {}".format(
                    byte_offset(text, i)))
            if name != stack[-1]["name"]:
                raise EntityParseError(
                    'Unmatched end tag at byte offset {}, expected "</{}>", found "</{}>"'
                    .format(byte_offset(text, i), stack[-1]["name"], name))
            tag = stack.pop()
            entity = _entity_for(tag, stack, text)
            if entity is not None and position > tag["start"]:
                entity.update(offset=tag["start"], length=position - tag["start"])
                entities.append(entity)
            i = close + 1
            continue
        else:
            name, attrs, after = _start_tag(text, i)
            stack.append({"name": name, "attrs": attrs, "start": position, "at": i})
            i = after
            continue
        out.append(ch)
        position += utf16_len(ch)
    if stack:
        raise EntityParseError('Can\'t find end tag corresponding to start tag "{}"'.format(
            stack[-1]["name"]))
    entities.sort(key=lambda e: (e["offset"], -e["length"]))
    return "".join(out), entities
