# Console command-line parsing, and the built-in commands read from their table when run or listed.
from stub_app import stub_app
from support import NotImported, imported, raises, remove_tree, run

from mimi.channels.cmdline import nearest, split_args as split
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


# ---- prose taken verbatim after the fixed words (chat, memory_write, watch_add...) ----


def test_prose_keeps_apostrophes_quotes_and_hashes():
    assert split("chat what's the weather in Paris?", 1) == ["chat", "what's the weather in Paris?"]
    assert split('memory_write I\'m Bob; say "hi" #1  ', 1) == ["memory_write", 'I\'m Bob; say "hi" #1']
    assert split("chat   two  spaces\tinside  ", 1) == ["chat", "two  spaces\tinside"]


def test_prose_after_quoted_words():
    line = 'watch_add "my plant" adc:4 60 tell me when it\'s "dry"'
    assert split(line, 4) == ["watch_add", "my plant", "adc:4", "60", 'tell me when it\'s "dry"']
    assert split('tool_exec web_fetch {"url": "http://x/a b"}', 2) == [
        "tool_exec", "web_fetch", '{"url": "http://x/a b"}']


def test_prose_that_is_one_quoted_string_loses_its_quotes():
    assert split('memory_write "The owner likes tea."', 1) == ["memory_write", "The owner likes tea."]
    assert split("chat 'hi there'", 1) == ["chat", "hi there"]
    assert split('chat "a" and "b"', 1) == ["chat", '"a" and "b"']  # not one string: as typed
    assert split('chat "unclosed', 1) == ["chat", '"unclosed']


def test_prose_missing_or_short_lines():
    assert split("chat", 1) == ["chat"]
    assert split("chat   ", 1) == ["chat"]
    assert split("tool_exec get_current_time", 2) == ["tool_exec", "get_current_time"]


def test_nearest_command_names():
    names = ["help", "heap_info", "status", "wifi_set", "wifi_status", "chat", "memory_write"]
    assert nearest("helpp", names) == ["help"]
    assert nearest("stauts", names) == ["status"]
    assert nearest("HELP", names) == ["help"]
    assert nearest("wifi", names) == ["wifi_set", "wifi_status"]
    assert nearest("memory_wirte", names) == ["memory_write"]
    assert nearest("xyzzy", names) == []
    assert nearest("hello", names) == []  # a greeting, not a typo: the console suggests chat
    assert nearest("q" * 500, names) == []


def test_builtin_commands_are_read_from_their_table_when_run_or_listed():
    app = stub_app("commands")
    try:
        commands = app.console.commands
        assert commands.table["status"][1:] == ("status", 0, 0, "what is configured, connected and running")
        assert "set_model" not in commands.table and "set_model" in commands.names()  # made when typed, not held
        assert commands.entry("set_model")[1:] == ("set_model <model_id>", 1, 1, "choose the Claude model")
        assert commands.entry("chat")[1:4] == ("chat <text>", 1, -1)
        assert commands.entry("nope") is None
        lines = []
        commands.out = lines.append
        run(commands.execute("help"))
        assert len(commands.names()) == 22 and list(commands.table) == ["status"]
        assert lines[0] == "Commands by group (help <group> or help <command> tells more):"
        assert "  start     chat heap_info help restart status" in lines  # every name under its group
        assert sum(len(line.split()) - 1 for line in lines[1:]) == 22
        del lines[:]
        run(commands.execute("help settings"))  # a group: its commands' usage and purpose
        widest = "config_show [group]"
        assert lines[0] == "Every setting:" and lines[1].startswith("  config_reset" + " " * (len(widest) - 12))
        assert "  config_set <namespace.key> <value>  change any setting (see config_show)" in lines
        del lines[:]
        run(commands.execute("help chat"))  # a command
        assert lines == ["  chat <text>  talk to the agent from the console"]
        run(commands.execute("help wifi_sett"))
        assert lines[-1].startswith("error: no command or group 'wifi_sett'; did you mean wifi_set?; the groups: start,")
        run(commands.execute("set_model claude-x"))
        assert lines[-1] == "llm_config.model = claude-x (saved; in effect now)"
        assert app.config.get("llm_config", "model") == "claude-x"
        run(commands.execute("set_max_tokens"))
        assert lines[-1] == "usage: set_max_tokens <n>"
    finally:
        remove_tree(app.top)


_LINES = (
    "\nlater_one\tlater_one <x>\t1\t1\tcalls a method of app.part\tapp.part.run"
    "\nlater_two\tlater_two [y]\t0\t1\tcalls a module's function with app.part first\ttest_commands:_later_two(app.part)"
    "\n"
)


async def _later_two(part, *args):
    await part.run("two", *args)


class _Part:
    def __init__(self):
        self.calls = []

    async def run(self, *args):
        self.calls.append(args)


def test_a_layer_adds_its_commands_as_lines_read_when_run_or_listed():
    app = stub_app("commands_lines")
    try:
        commands = app.console.commands
        commands.add_lines(_LINES)
        commands.add_lines(_LINES)  # again (a module set up twice): the same text, kept once
        assert "later_one" not in commands.table and [t[0] for t in commands.texts].count(_LINES) == 1
        assert commands.entry("later_two")[1:] == ("later_two [y]", 0, 1, "calls a module's function with app.part first")
        app.part = _Part()  # found when the command runs, not when it is added
        lines = []
        commands.out = lines.append
        run(commands.execute("later_one 5"))
        assert app.part.calls == [("5",)]
        run(commands.execute("later_one"))
        assert lines[-1] == "usage: later_one <x>"
        run(commands.execute("latr_one"))
        assert lines[-1] == "unknown command 'latr_one'; did you mean later_one?"
        del lines[:]
        run(commands.execute("help"))
        assert len(commands.names()) == 24
        assert "  other     later_one later_two" in lines  # a group of their own: no group names them
        run(commands.execute("help later_two"))
        assert lines[-1] == "  later_two [y]  calls a module's function with app.part first"
    finally:
        remove_tree(app.top)


def test_a_module_function_gets_its_first_argument_and_a_lazy_module_is_imported_at_the_first_use():
    from mimi.tools.builtin_defs import COMMANDS
    from mimi.tools.registry import Registry

    app = stub_app("commands_module")
    try:
        commands = app.console.commands
        app.registry = tools = Registry(app)
        tools.add_commands("mimi.tools.gpio")  # only gpio's lines of builtin_defs.COMMANDS
        assert sorted(name for name in commands.names() if name.startswith("gpio_")) == ["gpio_allow", "gpio_deny"]
        assert "watch_add" not in commands.names() and commands.texts[-1] == [COMMANDS, ["mimi.tools.gpio"]]
        assert "gpio_allow" not in commands.table
        with NotImported("mimi.tools.gpio"):
            app.config.set("tool_config", "gpio_allow", "4")
            run(commands.execute("gpio_deny 4"))  # gpio.deny_command(app.config, "4"): its module imported now
            assert imported("mimi.tools.gpio") and app.config.get("tool_config", "gpio_allow") == ""
        assert "gpio_allow" not in commands.table and not tools._bound  # no tools made for a command
        app.part = _Part()
        commands.add_lines(_LINES)
        run(commands.execute("later_two 7"))  # _later_two(app.part, "7") from this module
        assert app.part.calls == [("two", "7")] and not tools._bound
    finally:
        remove_tree(app.top)
