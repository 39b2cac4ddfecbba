# Every console command's line (a str constant of a layer, read when the command is typed) names a handler
# that exists: each handler path and its first argument are found on a booted App, as the console finds them.
import esp32
from mimi.tools import builtin_defs  # noqa: F401  its 12 KB constants made first: the unit heap is small
from support import remove_tree, tempdir
from test_structure import _firmware_root, _modules


def test_every_console_command_names_a_handler_that_exists():
    from mimi.app import App

    # The layers' command tables are found before the App is booted: the unit heap is small.
    tables = []
    for module, path in sorted(_modules(_firmware_root()).items()):
        with open(path) as f:
            tables += [(module, line.split(" ")[0]) for line in f if line.startswith("COMMANDS = (") or
                       line.startswith("_COMMANDS = (")]
    esp32.set_flash_dir(None)
    top = tempdir("handlers")
    try:
        app = App(data_root=top + "/data", cert_dirs=(), tools_dir=top + "/tools", www_dir=top + "/www")
        commands = app.console.commands
        # Every layer's command lines, those added at boot and those a layer adds when it is made later.
        texts = [text for text, _ in commands.texts]
        for module, name in tables:
            texts.append(getattr(__import__(module, None, None, ["_"]), name))
        checked = []
        for text in texts:
            commands.add_lines(text)
            for line in text.split("\n")[1:-1]:
                name = line.split("\t")[0]
                target = commands.target(name)
                if target is None:
                    continue
                path, _, first = target.partition("(")
                assert callable(commands.find(path)), line
                if first:
                    assert commands.find(first[:-1]) is not None, line
                checked.append(name)
        assert "usage" in checked and "gpio_allow" in checked and "tool_policy" in checked and "mqtt_set" in checked
        assert len(checked) > 40
    finally:
        remove_tree(top)
