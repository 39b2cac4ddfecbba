# The client side's mcp_* console commands (loaded when one is typed): a server the board's agent uses
# (mcp_add), one Anthropic's API calls itself (mcp_remote), the list, forgetting one, and a server's tools.
# A token is never printed: the console echoes stars for these commands, and mcp_list masks it.
from mimi import mcp, platform
from mimi.mcp.store import describe
from mimi.safety.policy import level_of
from mimi.storage import files

_SHOWN_MAX = 72  # characters of a tool's description mcp_tools shows


def _say(text):
    platform.console_write(text + "\n")


async def add(app, name, url, token=None):
    """mcp_add <name> <url> [token]: saved, then its tools fetched now (the answer, or why not, in one line)."""
    clients = app.part("mcp_client")  # made now (parts.py), started with the network services
    replaced, dropped = clients.store.add(name, url, token)[1:]
    clients.apply()
    server = clients.servers[name]
    why = await server.fetch()
    done, note = "updated" if replaced else "added", _dropped(dropped)
    if why is not None:
        _say("MCP server {} {} (saved), but it did not answer: {}; its tools come when it does{}".format(
            name, done, why, note))
        return
    names = sorted(server.tools)
    shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
    _say("MCP server {} {} ({}): {} tool{}{}; each asks before it runs (tool_policy <tool> <level> changes that){}"
         .format(name, done, server.conn.version, len(names), "" if len(names) == 1 else "s",
                 ": " + shown if names else "", note))


async def add_remote(app, name, url, token=None):
    """mcp_remote <name> <https-url> [token]: a public server for Claude's MCP connector."""
    clients = app.part("mcp_client")
    replaced, dropped = clients.store.add(name, url, token, remote=True)[1:]
    clients.apply()
    _say("MCP server {} {} for Claude's MCP connector: Anthropic's API calls it itself in each agent turn, "
         "and the board does not see its tools (a server on your network: mcp_add){}".format(
             name, "updated" if replaced else "added", _dropped(dropped)))


def _dropped(why):
    """The answer's end when a server given again left its token behind (store.py says why)."""
    return "; token dropped: " + why if why else ""


async def list_all(app):
    if not files.exists(files.join(app.flash.root, mcp.FILE_NAME)):  # no server, no file (store.py)
        _say("no MCP servers; mcp_add <name> <url> [token]: the board calls it; mcp_remote <name> <https-url> "
             "[token]: Anthropic's API calls it")
        return
    clients = app.part("mcp_client")
    for entry in clients.store.servers:
        server = clients.servers.get(entry["name"])
        count = len(server.tools) if server is not None and server.fetched_ms is not None else None
        down = "; down: " + server.down if server is not None and server.down else ""
        _say(describe(entry, count) + down)


async def remove(app, name):
    clients = app.part("mcp_client")
    server = clients.servers.get(name)
    held = len(server.tools) if server is not None else 0
    clients.store.remove(name)
    clients.apply()
    _say("MCP server {} removed{}".format(name, "; its {} tools are gone from the agent".format(held) if held else ""))


async def tools(app, name):
    """mcp_tools <name>: the list fetched now, each tool with its level (tool_policy) and description."""
    clients = app.part("mcp_client")
    entry = clients.store.get(name)
    if entry is None:
        raise ValueError("no MCP server named '{}' (mcp_list shows them)".format(name))
    if entry.get("remote"):
        _say("{} is called by Anthropic's API itself (Claude's MCP connector): the board does not see its tools"
             .format(name))
        return
    server = clients.servers[name]
    why = await server.fetch()
    if why is not None:
        _say("{}: {}".format(name, why))
        return
    if not server.tools:
        _say("{} offers no tools".format(name))
    for tool_name in sorted(server.tools):
        tool = app.registry.tools[tool_name]
        text = tool.description.split("\n")[0]
        text = text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 1] + "\u2026"
        _say("  {}  ({})  {}".format(tool_name, level_of(app.config, tool_name, tool), text))
