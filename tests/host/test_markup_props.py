# Property tests (CPython, hypothesis) of Markdown -> Telegram HTML and message splitting.
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for _p in ("firmware", "host_sim/standins", "tests/unit", "host_sim"):
    _full = os.path.join(_ROOT, _p)
    if _full not in sys.path:
        sys.path.insert(0, _full)

from mimi.telegram.markup import split, split_html, to_html, visible_length  # noqa: E402
from test_markup import check_html  # noqa: E402

try:  # the fake Bot API's HTML parser, when it is there: a second, independent judge
    from telegram_html import parse_html
except ImportError:  # pragma: no cover
    parse_html = None

_SETTINGS = settings(max_examples=int(os.environ.get("MIMI_PROP_EXAMPLES", "200")), deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Pieces Claude's Markdown is made of, so that random texts hit the interesting cases often.
_TOKENS = ["*", "**", "***", "_", "__", "~~", "~", "`", "``", "```", "```py\n", "\n```\n", "[",
           "]",
           "](", "(", ")", "](https://x.y/a_b)", "](tg://user?id=1)", "](javascript:x)", "\\", "#",
           "# ", "- ", "* ", "> ", "---", "\n", "\n\n", " ", "  ", "<", ">", "&", '"', "&amp;",
           "word", "snake_case", "2*3", "\U0001f600", "\u4e2d", "\u00e9", "\u200d", "1. "]
markdown = st.lists(
    st.one_of(st.sampled_from(_TOKENS),
              st.text(st.characters(exclude_categories=("Cs",)), max_size=4)),
    max_size=60,
).map("".join)


def _valid(html):
    shown = check_html(html)
    if parse_html is not None:
        plain, _ = parse_html(html)
        assert plain == shown
    return shown


@_SETTINGS
@given(markdown)
def test_any_markdown_renders_valid_html_no_longer_than_the_source(text):
    html = to_html(text)
    shown = _valid(html)
    assert visible_length(html) == len(shown) <= len(text)


@_SETTINGS
@given(markdown, st.integers(min_value=0, max_value=400))
def test_every_truncated_draft_renders_valid_html(text, cut):
    _valid(to_html(text[:cut]))


@_SETTINGS
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=400) | markdown,
       st.integers(min_value=1, max_value=120))
def test_split_parts_fit_and_cover_the_text(text, limit):
    parts = split(text, limit)
    at = 0
    for part in parts:
        assert 0 < len(part) <= limit and part.strip()
        found = text.find(part, at)
        assert found >= 0 and not text[at:found].strip()
        at = found + len(part)
    assert not text[at:].strip()


@_SETTINGS
@given(markdown, st.integers(min_value=8, max_value=200))
def test_split_html_parts_are_valid_and_fit(text, limit):
    pairs = split_html(text, limit)
    assert [plain for _, plain in pairs] == split(text, limit)
    for html, plain in pairs:
        _valid(html)
        assert 0 < visible_length(html) <= limit and len(plain) <= limit


@pytest.mark.skipif(parse_html is None, reason="host_sim/telegram_html.py is not there")
def test_fake_telegram_parser_agrees_on_a_sample():
    html = to_html("**b** _i_ `c` [l](https://x.y) > & <\n```py\nx<y\n```")
    plain, entities = parse_html(html)
    assert plain == "b i c l > & <\nx<y"
    assert [e["type"] for e in entities] == ["bold", "italic", "code", "text_link", "pre"]
