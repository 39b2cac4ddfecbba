# Secrets typed on the console: shown as stars as they are typed and never kept in the line history, for every
# command that takes one, config_set of a secret setting included; the settings' secrets and the commands that
# take them cannot drift apart.
from mimi import settings
from mimi.channels.console import Console
from stub_app import Holder
from test_line_editor import LEFT, UP, Screen, _type
from test_structure import _firmware_root, _modules


def _console(every_layer=False):
    """(the console's own line editor drawing on a Screen, the screen, its commands): only the built-ins, or
    every layer's lines too, as the booted board has them."""
    console = Console(Holder())
    commands = console.commands
    if every_layer:
        for module, path in sorted(_modules(_firmware_root()).items()):
            with open(path) as f:
                names = [line.split(" ")[0] for line in f if line.startswith(("COMMANDS = (", "_COMMANDS = ("))]
            for name in names:
                commands.add_lines(getattr(__import__(module, None, None, ["_"]), name))
    screen = Screen()
    console.editor.write, console.editor.echo = screen.write, True
    return console.editor, screen, commands


def test_config_set_of_a_secret_is_starred_as_typed_and_kept_out_of_the_history():
    editor, screen, _ = _console()
    _type(editor, "config_set gw_config.ws_token my-new-token")
    assert screen.text == "config_set gw_config.ws_token " + "*" * 12
    _type(editor, LEFT + b"X")  # an edit inside the secret is starred too
    assert screen.text == "config_set gw_config.ws_token " + "*" * 13
    assert _type(editor, b"\r") == ["config_set gw_config.ws_token my-new-tokeXn"]
    _type(editor, "config_set llm_config.api_key sk-ant-secret\r")
    _type(editor, "config_set mcp_config.token an-mcp-token\r")
    assert editor.history == []
    _type(editor, UP)
    assert screen.text == ""
    _type(editor, "config_set llm_config.model claude-x\r")  # not a secret: shown and kept
    assert editor.history == ["config_set llm_config.model claude-x"]


def test_a_command_declares_its_secret_argument_and_only_from_there_are_stars():
    editor, screen, _ = _console(every_layer=True)
    _type(editor, "wifi_set HomeNet hunter2-pw")
    assert screen.text == "wifi_set HomeNet " + "*" * 10
    _type(editor, b"\r")
    _type(editor, "mcp_add ha http://ha.local:8123/mcp tok-123456")
    assert screen.text == "mcp_add ha http://ha.local:8123/mcp " + "*" * 10
    _type(editor, b"\r")
    _type(editor, "set_ws_token abcdefgh12")
    assert screen.text == "set_ws_token " + "*" * 10
    _type(editor, b"\r")
    _type(editor, "set_api_key sk-ant-1\r")  # a setter of a secret setting: its row says so
    assert editor.history == []
    _type(editor, "mqtt_auth off\r")  # no secret typed: kept
    assert editor.history == ["mqtt_auth off"]


def _named_commands(description):
    """The commands a setting's description names in parentheses: "(set_stt_key)", "(set_search_key <key>)"."""
    names, at = [], description.find("(")
    while at >= 0:
        end = at + 1
        while end < len(description) and (description[end].isalpha() or description[end] == "_"):
            end += 1
        if "_" in description[at + 1:end]:
            names.append(description[at + 1:end])
        at = description.find("(", end)
    return names


def test_every_secret_setting_names_its_commands_and_each_of_them_stars_the_secret():
    editor, screen, commands = _console(every_layer=True)
    known = commands.names()
    descriptions = {(s[0], s[1]): s[7] for s in settings.SETTINGS}
    secrets = settings.secret_names()
    assert ("gw_config", "ws_token") in secrets and ("mcp_config", "token") in secrets
    for ns, key in secrets:
        _type(editor, "config_set {}.{} a-secret-value".format(ns, key))
        assert screen.text.endswith(" " + "*" * 14), (ns, key, screen.text)
        _type(editor, b"\r")
        named = _named_commands(descriptions[(ns, key)])
        assert named, "{}.{}: its description names no command that sets it".format(ns, key)
        for name in named:
            assert name in known, (ns, key, name)
            _type(editor, name + " a b c d e-secret\r")
            assert editor.history == [], "{} sets the secret {}.{} but does not declare a secret argument".format(
                name, ns, key)
    # and the other way: a setter of a setting that is not secret shows what is typed
    for line in ("set_model claude-x", "config_set llm_config.model claude-x", "config_set no_such.setting x"):
        _type(editor, line)
        assert screen.text == line
        _type(editor, b"\r")
    assert len(editor.history) == 3
