# jsontext.py and utf8.py: JSON from outside gives only valid text, the same on both runtimes.
from support import raises

from mimi import jsontext, utf8

PIZZA = "\U0001f355"
PIZZA_UTF8 = b"\xf0\x9f\x8d\x95"


def _utf8(text):
    """The bytes a str would be sent as; valid UTF-8 or an AssertionError."""
    data = text.encode()
    assert utf8.strict(data) == text, repr(data)
    return data


def test_escaped_surrogate_pair_becomes_one_character():
    for source in ('"\\ud83c\\udf55"', b'"\\ud83c\\udf55"', bytearray(b'"\\ud83c\\udf55"'), '"\\uD83C\\uDF55"'):
        value = jsontext.loads(source)
        assert len(value) == 1 and _utf8(value) == PIZZA_UTF8


def test_a_real_telegram_update_with_emoji_and_cyrillic():
    raw = b'{"update_id":7,"message":{"text":"\\ud83d\\udcb0 \\u041a\\u0430\\u0441\\u0441\\u0430"}}'
    text = jsontext.loads(raw)["message"]["text"]
    assert text == "\U0001f4b0 \u041a\u0430\u0441\u0441\u0430"
    _utf8(text)


def test_every_kind_of_text_survives():
    samples = [
        "I love pizza \U0001f355",
        "\U0001f1f5\U0001f1f9 flag",  # regional indicator pair
        "\U0001f44d\U0001f3fd thumbs",  # skin tone
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 family",  # ZWJ sequence
        "\u4f60\u597d \U00020000",  # CJK and a CJK extension B character
        "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",  # Hebrew, Arabic
        "e\u0301 combining",
        "\U0001d400 math",
    ]
    for text in samples:
        escaped = "".join(_escape(ch) for ch in text)
        assert jsontext.loads('"' + escaped + '"') == text
        assert jsontext.loads(('"' + text + '"').encode()) == text  # raw UTF-8 too


def _escape(ch):
    code = ord(ch)
    if code < 0x80:
        return ch
    if code < 0x10000:
        return "\\u{:04x}".format(code)
    code -= 0x10000
    return "\\u{:04x}\\u{:04x}".format(0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


def test_lone_surrogates_become_replacement_characters():
    assert jsontext.loads('"a\\ud83cb"') == "a\ufffdb"
    assert jsontext.loads('"\\udf55\\ud83c"') == "\ufffd\ufffd"
    assert jsontext.loads('"\\ud83c\\u0041"') == "\ufffdA"  # a high half followed by no low half
    assert jsontext.loads('"end\\ud83c"') == "end\ufffd"


def test_escaped_backslashes_are_not_escapes():
    assert jsontext.loads('"a\\\\ud83c"') == "a\\ud83c"
    assert jsontext.loads('["\\\\", "\\ud83c\\udf55"]') == ["\\", PIZZA]


def test_bytes_that_are_not_utf8_are_replaced():
    assert jsontext.loads(b'"\xff\xfeok"') == "\ufffd\ufffdok"
    value = jsontext.loads(b'{"t": "\xed\xa0\xbd\xed\xb8\x80"}')["t"]  # a pair sent as raw halves
    assert "\ufffd" in value
    _utf8(value)


def test_malformed_json_is_still_a_value_error():
    for bad in ('{"a": ', '"\\ud83c', b"\xff{"):
        raises(ValueError, jsontext.loads, bad)


def test_clean_input_is_parsed_as_is():
    assert not jsontext._has_surrogate_escape(b'{"a": "\\u00e9\\u4f60 plain \\\\ud"}')
    assert jsontext._has_surrogate_escape('"\\uDbff"')
    assert jsontext.loads('{"n": [1, 2.5, null, true], "s": "\\u00e9"}') == {"n": [1, 2.5, None, True], "s": "\u00e9"}


def test_utf8_valid_text_and_strict():
    assert utf8.valid_text(b"caf\xc3\xa9") == "caf\u00e9"
    assert utf8.valid_text(b"ab\xc3") == "ab\ufffd"
    assert utf8.valid_text(b"\xc0\xaf") == "\ufffd\ufffd"  # overlong
    assert utf8.valid_text(b"\xf4\x90\x80\x80") == "\ufffd" * 4  # past U+10FFFF
    assert utf8.valid_text(PIZZA_UTF8 + b"\xed\xa0\x80!") == PIZZA + "\ufffd\ufffd\ufffd!"
    for bad in (b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xff", b"\xc3"):
        raises(ValueError, utf8.strict, bad)


def test_utf8_boundary():
    assert utf8.boundary(b"") == 0
    assert utf8.boundary(PIZZA_UTF8[:3]) == 0
    assert utf8.boundary(b"a" + PIZZA_UTF8) == 5

