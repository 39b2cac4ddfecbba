# Every registered tool (built-in, MQTT's, the owner's own) carries its safety facts: a tier, an acting flag
# and a default level, which the breaker and the policy read; and the docs' tool table says the same
# (docs/tools-and-safety.md).
import os
import sys

import esp32
from support import remove_tree, tempdir, write
from test_structure import _firmware_root

from mimi.safety import policy, roles
from mimi.tools.loading import discover, load_builtins
from mimi.tools.registry import Registry

_OWN_TOOLS = {
    "tool_plain.py": 'name = "plain"\ndescription = "d"\nschema = {"type": "object"}\n\n'
                     'def run(input):\n    return "ok"\n',
    "tool_acts.py": 'name = "acts"\ndescription = "d"\nschema = {"type": "object"}\nacting = True\n\n'
                    'def run(input):\n    return "ok"\n',
    "tool_asks.py": 'name = "asks"\ndescription = "d"\nschema = {"type": "object"}\ntier = "observer"\n'
                    'level = "confirm"\n\ndef run(input):\n    return "ok"\n',
}


def _registered(top):
    esp32.set_flash_dir(None)
    tools = Registry()
    load_builtins(tools)
    from mimi.mqtt import tool as mqtt_tool

    tools.add(mqtt_tool.MqttPublish(None))  # as parts.py adds it with the channel, once a broker is set
    folder = top + "/tools"
    os.mkdir(folder)
    for name, text in _OWN_TOOLS.items():
        write(folder + "/" + name, text)
    assert discover(tools, folder) == 3, tools.warnings
    return tools.tools


def _forget(top):
    for name in _OWN_TOOLS:
        sys.modules.pop(name[:-3], None)
    if top + "/tools" in sys.path:
        sys.path.remove(top + "/tools")
    remove_tree(top)


def _facts(tool):
    return tool.tier, "yes" if tool.acting else "no", tool.level


def test_every_registered_tool_has_a_tier_an_acting_flag_and_a_level():
    top = tempdir("facts")
    try:
        tools = _registered(top)
        assert len(tools) > 25
        for name, tool in tools.items():
            assert tool.tier in roles.ROLES and tool.acting in (True, False) and tool.level in policy.LEVELS, name
        assert _facts(tools["plain"]) == ("operator", "no", "autonomous")  # says nothing: an operator's, reads
        assert _facts(tools["acts"]) == ("owner", "yes", "report")  # acts: the owner's, reports
        assert _facts(tools["asks"]) == ("observer", "no", "confirm")  # its own tier and level
    finally:
        _forget(top)


def _readme_rows():
    """The tool table's rows, from the page that holds it (docs/tools-and-safety.md, "Tool tiers")."""
    rows, inside = {}, False
    with open(_firmware_root() + "/../docs/tools-and-safety.md") as f:
        for line in f:
            if line.startswith("| tool | tier | acts | default level |"):
                inside = True
            elif inside and line.startswith("| ") and not line.startswith("|---"):
                cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
                rows[cells[0]] = tuple(cells[1:])
            elif inside and not line.startswith("|"):
                break
    return rows


def test_the_readme_tool_table_is_what_the_code_says():
    top = tempdir("facts")
    try:
        tools = _registered(top)
        built_in = {name: _facts(tool) for name, tool in tools.items() if name not in ("plain", "acts", "asks")}
        assert _readme_rows() == built_in
    finally:
        _forget(top)
