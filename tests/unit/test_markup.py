# Markdown -> Telegram HTML, splitting, visible length: cases, valid HTML for every prefix, limits.
from support import raises

from mimi.telegram.markup import MESSAGE_LIMIT, split, split_html, to_html, visible_length

_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_TAGS = ("b", "i", "u", "s", "code", "pre", "a", "blockquote")


def _check_tag(tag, stack):
    """Open or close one tag (the text between < and >) on stack, as Telegram's parser would."""
    if tag.startswith("/"):
        assert stack, "end tag </{}> without a start tag".format(tag[1:])
        name, shown = stack.pop()
        assert tag[1:] == name, "</{}> closes <{}>".format(tag[1:], name)
        assert shown.strip(), "empty <{}> element".format(name)
        if stack:
            stack[-1][1] = stack[-1][1] + shown
        return
    name, _, attrs = tag.partition(" ")
    assert name in _TAGS, "unsupported tag <{}>".format(tag)
    inside = [entry[0] for entry in stack]
    assert "code" not in inside, "<{}> inside <code>".format(name)
    in_pre = "pre" in inside
    assert not in_pre or (name == "code" and inside[-1] == "pre"), "<{}> in <pre>".format(name)
    assert name != "pre" or not stack, "<pre> must not be nested"
    assert name != "a" or "a" not in inside, "link inside a link"
    assert name != "code" or "a" not in inside, "code inside a link"
    assert name != "blockquote" or "blockquote" not in inside, "nested blockquote"
    if name == "a":
        assert attrs.startswith('href="') and attrs.endswith('"'), "bad link " + tag
        href = attrs[6:-1]
        assert '"' not in href and "<" not in href, "bad href " + href
        assert href.startswith(("http://", "https://", "tg://")), "unsafe href " + href
    elif name == "code" and attrs:
        assert inside[-1:] == ["pre"] and attrs.startswith('class="language-'), tag
        assert attrs.endswith('"') and '"' not in attrs[16:-1], tag
    else:
        assert not attrs, "unexpected attributes in <{}>".format(tag)
    stack.append([name, ""])


def check_html(html):
    """The visible text of html; AssertionError unless Telegram's HTML mode accepts it."""
    stack, shown, pending = [], [], None  # pending: characters of a tag or entity being read
    in_tag = False
    for ch in html:
        if pending is not None:
            if ch == (">" if in_tag else ";"):
                word = "".join(pending)
                if in_tag:
                    _check_tag(word, stack)
                else:
                    assert word in _ENTITIES, "unknown entity &{};".format(word)
                    shown.append(_ENTITIES[word])
                    if stack:
                        stack[-1][1] += _ENTITIES[word]
                pending = None
            else:
                assert in_tag or len(pending) < 8, "bare & in the text"
                assert ch != "<", "< inside a tag or entity"
                pending.append(ch)
        elif ch in "<&":
            pending, in_tag = [], ch == "<"
        else:
            assert ch != ">", "bare > in the text"
            shown.append(ch)
            if stack:
                stack[-1][1] += ch
    assert pending is None, "unfinished tag or entity at the end"
    assert not stack, "unclosed <{}>".format(stack[-1][0] if stack else "")
    return "".join(shown)


CASES = (
    ("**bold** and __bold__", "<b>bold</b> and <b>bold</b>"),
    ("*italic* and _italic_", "<i>italic</i> and <i>italic</i>"),
    ("snake_case_words stay, 2*3*4 too", "snake_case_words stay, 2*3*4 too"),
    ("x**2 + y**2 and a_b_c", "x**2 + y**2 and a_b_c"),
    ("***both*** ~~gone~~", "<b><i>both</i></b> <s>gone</s>"),
    ("**bold _inner_ bold**", "<b>bold <i>inner</i> bold</b>"),
    ("a lone ** marker and *one", "a lone ** marker and *one"),
    ("**a *b** c*", "<b>a *b</b> c*"),
    ("* not a bullet*", "• not a bullet*"),
    ("`x < y && z` code", "<code>x &lt; y &amp;&amp; z</code> code"),
    ("`**not bold**` and ``a ` b``", "<code>**not bold**</code> and <code>a ` b</code>"),
    ("an `unclosed backtick", "an `unclosed backtick"),
    ("[docs](https://example.com/a?b=1&c=2)",
     '<a href="https://example.com/a?b=1&amp;c=2">docs</a>'),
    ("[wiki](https://en.wikipedia.org/wiki/Rust_(language))",
     '<a href="https://en.wikipedia.org/wiki/Rust_(language)">wiki</a>'),
    ('[q](http://x.y/"quoted")', '<a href="http://x.y/&quot;quoted&quot;">q</a>'),
    ("[me](tg://user?id=42)", '<a href="tg://user?id=42">me</a>'),
    ("[ ](https://x.y/a_b)", "[ ](https://x.y/a_b)"),  # a link that shows nothing stays text
    ("[bad](javascript:alert(1))", "[bad](javascript:alert(1))"),
    ("[spaced](http://a b)", "[spaced](http://a b)"),
    ("[**bold link**](https://x.y)", '<a href="https://x.y"><b>bold link</b></a>'),
    ("[`file.py`](https://x.y)", '<a href="https://x.y">file.py</a>'),
    ("[](https://x.y) [only brackets]", "[](https://x.y) [only brackets]"),
    ("# Title\n## Sub *x*", "<b>Title</b>\n<b>Sub <i>x</i></b>"),
    ("#hashtag", "#hashtag"),
    ("#\n# \n####### seven", "#\n# \n####### seven"),
    ("> - quoted item\n> # quoted title",
     "<blockquote>\u2022 quoted item\n<b>quoted title</b></blockquote>"),
    ("***\n* * *\n___", "\u2014\u2014\u2014\n\u2014\u2014\u2014\n\u2014\u2014\u2014"),
    ("- one\n* two\n  + three", "• one\n• two\n  • three"),
    ("1. first\n2. second", "1. first\n2. second"),
    ("> quoted **text**\n> more\nafter",
     "<blockquote>quoted <b>text</b>\nmore</blockquote>\nafter"),
    (">> nested", "<blockquote>&gt; nested</blockquote>"),
    ("above\n---\nbelow", "above\n\u2014\u2014\u2014\nbelow"),
    ("```python\nif a < b and c > d:\n    print('**x**')\n```",
     '<pre><code class="language-python">if a &lt; b and c &gt; d:\n'
     "    print('**x**')</code></pre>"),
    ("```\nplain & simple\n```\nafter", "<pre>plain &amp; simple</pre>\nafter"),
    ('```py"><b>\nx\n```', '<pre><code class="language-pyb">x</code></pre>'),
    ("```sh\nunclosed fence", '<pre><code class="language-sh">unclosed fence</code></pre>'),
    ("1. item\n   ```js\n   let x = 1;\n   ```",
     '1. item\n<pre><code class="language-js">let x = 1;</code></pre>'),
    ("<b>not a tag</b> & &amp;", "&lt;b&gt;not a tag&lt;/b&gt; &amp; &amp;amp;"),
    ("\\*literal\\* and C:\\new", "*literal* and C:\\new"),
    ("caf\u00e9_cr\u00e8me_br\u00fbl\u00e9e and _\u00e9t\u00e9_",
     "caf\u00e9_cr\u00e8me_br\u00fbl\u00e9e and <i>\u00e9t\u00e9</i>"),
    ("emoji **\U0001f600 ok** \u4e2d\u6587", "emoji <b>\U0001f600 ok</b> \u4e2d\u6587"),
    ("line\r\n**crlf**\r\n", "line\n<b>crlf</b>\n"),
)

SAMPLES = (
    "# Plan for *today*\n\nHere is **what I found** about `snake_case_names` and 2*3*4:\n\n"
    "- first, see [the docs](https://docs.python.org/3/library/re.html)\n"
    "- second: ~~old~~ **new _approach_**\n  * nested & indented <tag>\n\n"
    "> A quote with `code` and **bold**\n> second line\n\n---\n\n"
    "```python\ndef f(x):\n    return x**2 < 10  # <b>\n```\n\n"
    "1. done\n2. *next* step\n\nThat's all \U0001f600 \u2014 \u4e2d\u6587 text!",
    "**unbalanced *mix** of_markers* and [a link](http://x.y/z_(w)) `tick `` ` ~~ ~",
    "> quote\n```\ncode in **fence**\n``\n```\n# \n-\n> \n[x](https://a\\) \\",
)


def test_the_validity_checker_rejects_what_telegram_rejects():
    assert check_html('a &amp; <b>b</b> <pre><code class="language-c">x</code></pre>') == "a & b x"
    for bad in ("<b>x", "x</b>", "<b><i>x</b></i>", "<p>x</p>", "a < b", "a > b", "a & b", "&nbsp;",
                "<b></b>", "<b> </b>", "<code><b>x</b></code>", "<a href='x'>y</a>",
                '<a href="javascript:x">y</a>', '<a href="http://x"><code>y</code></a>',
                "<blockquote><blockquote>x</blockquote></blockquote>", "<b><pre>x</pre></b>",
                '<code class="language-c">x</code>', "<b", "&amp"):
        raises(AssertionError, check_html, bad)


def test_cases_render_as_expected():
    for markdown, expected in CASES:
        html = to_html(markdown)
        assert html == expected, (markdown, html, expected)
        check_html(html)


def test_every_prefix_of_the_samples_renders_valid_html():
    for text in SAMPLES + tuple(md for md, _ in CASES):
        for end in range(len(text) + 1):
            prefix = text[:end]
            html = to_html(prefix)
            try:
                shown = check_html(html)
            except AssertionError as exc:
                raise AssertionError("{!r} -> {!r}: {}".format(prefix, html, exc))
            assert visible_length(html) == len(shown) <= len(prefix)


def test_visible_length_counts_code_points_after_parsing():
    assert visible_length('<b>a&amp;b</b> <a href="http://x.y">\U0001f600</a>') == 5
    assert visible_length("&lt;&gt;&quot;") == 3
    assert visible_length("<pre><code class=\"language-c\">\u4e2d</code></pre>") == 1
    assert visible_length("") == 0
    html = to_html(SAMPLES[0])
    assert visible_length(html) == len(check_html(html))


def _assert_parts_cover(text, parts, limit):
    """Every part fits and is not blank; parts appear in order with only whitespace between."""
    at = 0
    for part in parts:
        assert 0 < len(part) <= limit and part.strip(), (part, limit)
        found = text.find(part, at)
        assert found >= 0 and not text[at:found].strip(), (text[at:found], part)
        at = found + len(part)
    assert not text[at:].strip()


def test_split_prefers_paragraphs_then_lines_then_spaces():
    text = "a" * 40 + " " + "b" * 10 + "\n\n" + "c" * 10 + "\n" + "d" * 10 + " " + "e" * 20
    second = "c" * 10 + "\n" + "d" * 10 + " " + "e" * 20
    assert split(text, 80) == ["a" * 40 + " " + "b" * 10, second]
    text = "a" * 50 + "\n" + "b" * 10 + " " + "c" * 30
    assert split(text, 70) == ["a" * 50, "b" * 10 + " " + "c" * 30]
    text = "a" * 30 + "\n" + "b" * 30 + " " + "c" * 30
    assert split(text, 70) == ["a" * 30 + "\n" + "b" * 30, "c" * 30]
    text = "word " * 30
    parts = split(text, 22)
    assert parts[0] == "word word word word" and all(p.strip() == p for p in parts[:-1])
    _assert_parts_cover(text, parts, 22)


def test_split_keeps_short_text_and_drops_blank():
    assert split("hello") == ["hello"]
    assert split("  indented\n") == ["  indented\n"]
    assert split("") == [] and split(" \n\n ") == []
    assert split("x" * MESSAGE_LIMIT) == ["x" * MESSAGE_LIMIT]
    assert len(split("x" * (MESSAGE_LIMIT + 1))) == 2
    assert split("ab cd", 1) == ["a", "b", "c", "d"]
    raises(ValueError, split, "abc", 0)


def test_split_without_spaces_cuts_at_the_limit():
    text = ("abcdefghijklmnopqrstuvwxyz" * 385)[:10000]  # no 10000-item list: the unit heap is small
    parts = split(text)
    assert [len(p) for p in parts] == [4096, 4096, 1808]
    assert "".join(parts) == text


def test_split_never_breaks_a_code_point_or_emoji_sequence():
    # a unit longer than one code point is one visible sign (ZWJ family, skin tone, keycap)
    for unit in ("\U0001f600", "\u4e2d", "\u00e9", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
                 "\U0001f44d\U0001f3fd", "1\ufe0f\u20e3", "\U0001f1f5\U0001f1f9", "e\u0301"):
        for limit in (MESSAGE_LIMIT, 100, 7):
            text = unit * (min(9000, limit * 40) // len(unit) + 1)  # past two messages, or 40 parts
            parts = split(text, limit)
            assert "".join(parts) == text
            for part in parts:
                assert len(part) <= limit
                part.encode("utf-8")
                if len(unit) <= limit:
                    assert part.startswith(unit[0]) and len(part) % len(unit) == 0, (unit, limit)


def test_split_keeps_flags_whole_whatever_the_offset():
    for lead in ("", "x", "xy"):
        text = lead + "\U0001f1f5\U0001f1f9\U0001f1ef\U0001f1f5" * 30
        for limit in (7, 8, 9, 64):
            parts = split(text, limit)
            assert "".join(parts) == text
            for part in parts:
                flags = part[len(lead):] if part.startswith(lead) and lead else part
                assert len(part) <= limit and len(flags) % 2 == 0, (lead, limit, part)


def test_draft_tail_starts_at_a_whole_sign():
    from mimi.telegram.markup import tail
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
    text = "start " + family * 50
    for limit in range(10, 40):
        shown = tail(text, limit)
        assert len(shown) <= limit and text.endswith(shown) and shown.startswith("\U0001f468"), limit
    assert tail("\U0001f1f5\U0001f1f9" * 5, 5) == "\U0001f1f5\U0001f1f9" * 2
    assert tail("short", 100) == "short"


def test_split_mixed_text_covers_everything():
    text = (SAMPLES[0] + "\n\n") * 20
    for limit in (4096, 500, 64, 9):
        parts = split(text, limit)
        _assert_parts_cover(text, parts, limit)


def test_split_html_keeps_each_part_under_the_limit():
    text = (SAMPLES[0] + "\n\n") * 40
    pairs = split_html(text)
    assert len(pairs) > 1
    assert [plain for _, plain in pairs] == split(text)
    for html, plain in pairs:
        assert visible_length(html) <= MESSAGE_LIMIT and len(plain) <= MESSAGE_LIMIT
        check_html(html)
        assert "<b>" in html and "<pre>" in html


def test_split_html_closes_and_reopens_a_cut_code_block():
    lines = "\n".join("line {} = a < b".format(i) for i in range(40))
    text = "Intro **bold**\n\n```python\n" + lines + "\n```\nAfter *it*"
    pairs = split_html(text, 300)
    assert len(pairs) >= 3
    for html, plain in pairs:
        check_html(html)
        assert visible_length(html) <= 300 and len(plain) <= 300
    assert pairs[0][0].startswith('Intro <b>bold</b>\n\n<pre><code class="language-python">line 0')
    assert pairs[0][0].endswith("</code></pre>")
    for html, _ in pairs[1:]:
        assert html.startswith('<pre><code class="language-python">line ')
    assert pairs[-1][0].endswith("</code></pre>\nAfter <i>it</i>")
    shown = "\n".join(check_html(html) for html, _ in pairs)
    assert shown.count("line ") == 40 and "```" not in shown


def test_split_html_gives_plain_text_for_a_part_with_nothing_to_show():
    assert split_html("```\n```") == [("```\n```", "```\n```")]
    assert split_html("a < b") == [("a &lt; b", "a < b")]
    assert split_html("") == []


def test_split_of_a_replys_pieces_gives_the_parts_of_the_whole():
    # a streamed reply is split from its pieces, joined only a window at a time: the same parts as the whole
    from mimi.llm.text import Text
    texts = [
        (SAMPLES[0] + "\n\n") * 4,
        "a" * 40 + " " + "b" * 10 + "\n\n\n\n" + "c" * 10 + "\n" + "d" * 10 + "   " + "e" * 20,
        "".join(chr(ord("a") + i % 26) for i in range(700)),
        "x" + "\U0001f1f5\U0001f1f9\U0001f1ef\U0001f1f5" * 30 + "\n\n" + "word " * 40,
        ("Paragraph " + "x" * 150 + "\n\n") * 4,
    ]
    for text in texts:
        for limit in (4096, 200, 64, 9):
            whole = split(text, limit)
            for size in (1, 3, 7, 64, 512):
                pieces = [text[i:i + size] for i in range(0, len(text), size)]
                assert split(Text(pieces), limit) == whole, (text[:20], limit, size)
            assert split(Text([]), limit) == [] and split(Text(["", " ", "\n"]), limit) == []
