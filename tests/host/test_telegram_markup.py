# Telegram's parse modes (HTML, MarkdownV2, legacy Markdown) as the fake parses them.
import html

import pytest
from hypothesis import given, strategies as st

from host_sim.telegram_html import EntityParseError, parse_html, utf16_len
from host_sim.telegram_markdown import RESERVED_V2, parse_markdown, parse_markdown_v2

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


def escape_v2(text):
    return "".join("\\" + c if c in RESERVED_V2 + "\\" else c for c in text)


@given(texts)
def test_escaped_text_parses_back_to_itself(text):
    assert parse_html(html.escape(text, quote=False)) == (text, [])
    assert parse_markdown_v2(escape_v2(text)) == (text, [])


@given(texts, texts)
def test_a_bold_span_is_measured_in_utf16_units(before, inside):
    source = "{}<b>{}</b>".format(html.escape(before), html.escape(inside))
    plain, entities = parse_html(source)
    assert plain == before + inside
    expected = [{"type": "bold", "offset": utf16_len(before), "length": utf16_len(inside)}]
    assert entities == (expected if inside else [])


def test_html_tags_map_to_entity_types():
    plain, entities = parse_html(
        "<strong>a</strong><em>b</em><ins>c</ins><del>d</del><tg-spoiler>e</tg-spoiler>"
        '<span class="tg-spoiler">f</span><code>g</code><blockquote>h</blockquote>'
        "<blockquote expandable>i</blockquote>&#65;&#x42;&quot;")
    assert plain == 'abcdefghiAB"'
    assert [e["type"] for e in entities] == [
        "bold", "italic", "underline", "strikethrough", "spoiler", "spoiler", "code",
        "blockquote", "expandable_blockquote"]


@pytest.mark.parametrize("bad, detail", [
    ("a < b", 'Unsupported start tag "" at byte offset 2'),
    ("\u00e9 & x", "Unsupported HTML entity at byte offset 3"),
    ("<b>x", 'Can\'t find end tag corresponding to start tag "b"'),
    ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
    ("x</b>", "Unexpected end tag at byte offset 1"),
    ("<img src=x>", 'Unsupported start tag "img" at byte offset 0'),
])
def test_bad_html_names_the_problem_and_its_byte_offset(bad, detail):
    with pytest.raises(EntityParseError) as caught:
        parse_html(bad)
    assert str(caught.value) == detail


def test_markdown_v2_entities_and_errors():
    plain, entities = parse_markdown_v2("*b* _i_ __u__ ~s~ ||p|| `c\\`` [l](http://x.org/\\))")
    assert plain == "b i u s p c` l"
    assert [e["type"] for e in entities] == [
        "bold", "italic", "underline", "strikethrough", "spoiler", "code", "text_link"]
    assert entities[-1]["url"] == "http://x.org/)"
    assert parse_markdown_v2("```python\nx = 1\n```") == (
        "x = 1\n", [{"type": "pre", "offset": 0, "length": 6, "language": "python"}])
    for bad in ("*open", "1+1", "a_b", "[x](y"):
        with pytest.raises(EntityParseError):
            parse_markdown_v2(bad)


def test_legacy_markdown_has_four_entities_and_no_nesting():
    plain, entities = parse_markdown("*b* _i_ `c*` [l](http://x.org)")
    assert plain == "b i c* l"
    assert [e["type"] for e in entities] == ["bold", "italic", "code", "text_link"]
    with pytest.raises(EntityParseError):
        parse_markdown("*open")
    assert parse_markdown("1+1=2.") == ("1+1=2.", [])
