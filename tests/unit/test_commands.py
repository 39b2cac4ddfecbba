# Console command-line parsing.
from support import raises

from mimi.channels.commands import split_args


def test_plain_words():
    assert split_args("wifi_set home secret") == ["wifi_set", "home", "secret"]


def test_quotes_keep_spaces():
    assert split_args('wifi_set "My Home" \'pa ss\'') == ["wifi_set", "My Home", "pa ss"]


def test_escaped_quote_and_empty_argument():
    assert split_args('memory_write "say \\"hi\\"" ""') == ["memory_write", 'say "hi"', ""]


def test_extra_spaces_and_tabs():
    assert split_args("  chat\t hello   world ") == ["chat", "hello", "world"]


def test_unclosed_quote_is_an_error():
    assert "unclosed quote" in str(raises(ValueError, split_args, 'chat "oops'))
