# Secrets typed on the console: shown as stars as they are typed and never kept in the line history, for every
# command that takes one, config_set of a secret setting included; the settings' secrets and the commands that
# take them cannot drift apart.
from mimi import config
from mimi.channels.commands import Commands
from mimi.channels.line_editor import LineEditor
from test_line_editor import LEFT, UP, Screen, _type
from test_structure import _firmware_root, _modules


def _commands(every_layer=False):
    """The console's commands (only the built-ins, or every layer's lines too, as the booted board has them)."""
    commands = Commands(None, None)
    if every_layer:
        for module, path in sorted(_modules(_firmware_root()).items()):
            with open(path) as f:
                names = [line.split(" ")[0] for line in f if line.startswith(("COMMANDS = (", "_COMMANDS = ("))]
            for name in names:
                commands.add_lines(getattr(__import__(module, None, None, ["_"]), name))
    return commands


def _editor(commands):
    screen = Screen()
    return LineEditor(screen.write, True, commands.secret_from), screen


def test_config_set_of_a_secret_is_starred_as_typed_and_kept_out_of_the_history():
    editor, screen = _editor(_commands())
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
    editor, screen = _editor(_commands(every_layer=True))
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
    commands = _commands(every_layer=True)
    known = commands.names()
    descriptions = {(s[0], s[1]): s[7] for s in config.SETTINGS}
    secrets = config.secret_names()
    assert ("gw_config", "ws_token") in secrets and ("mcp_config", "token") in secrets
    for ns, key in secrets:
        line = "config_set {}.{} a-secret-value".format(ns, key)
        assert commands.secret_from(line) == line.index("a-secret"), (ns, key)
        named = _named_commands(descriptions[(ns, key)])
        assert named, "{}.{}: its description names no command that sets it".format(ns, key)
        for name in named:
            assert name in known, (ns, key, name)
            assert commands.secret_from(name + " a b c d e f") >= 0, \
                "{} sets the secret {}.{} but does not declare a secret argument".format(name, ns, key)
    # and the other way: a setter of a setting that is not secret shows what is typed
    assert commands.secret_from("set_model claude-x") == -1
    assert commands.secret_from("config_set llm_config.model claude-x") == -1
    assert commands.secret_from("config_set no_such.setting x") == -1
