# MCP both ways: the board's tools for MCP clients (server.py, POST /mcp on the gateway's port) and other MCP
# servers' tools for the board's agent (client.py), and Claude's own MCP connector (remote servers the
# Anthropic API calls itself). This boot part holds only the names and the console lines; the code of each
# side is imported at its first use: the client (app.part("mcp_client"), client_service.py) is made at boot when
# mcp.json lists a server, else at the first mcp_* command typed.
from mimi.storage import files

# This boot part itself is let go once the boot has added its lines (mimi/heap.py): its lines stay in flash.
LET_GO = ".:boot"

NS = "mcp_config"
FILE_NAME = "mcp.json"  # in the data folder: the MCP servers the board uses (the file tools cannot read it)
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\nset_mcp_token\tset_mcp_token <token|off>\t1\t1\tthe token MCP clients present (off: the web chat's token)"
    "\tmimi.mcp.server_commands:set_token(app)\t1"
    "\nmcp_role\tmcp_role [role]\t0\t1\trole of MCP clients' tool calls: observer (default), operator or owner"
    "\tmimi.mcp.server_commands:set_role(app)"
    "\nmcp_add\tmcp_add <name> <url> [token]\t2\t3\tlet the agent use an MCP server's tools (mcp__<name>__<tool>)"
    "\tmimi.mcp.client_commands:add(app)\t3"
    "\nmcp_remote\tmcp_remote <name> <https-url> [token]\t2\t3\ta public MCP server Anthropic's API calls itself "
    "(Claude's MCP connector)\tmimi.mcp.client_commands:add_remote(app)\t3"
    "\nmcp_list\tmcp_list\t0\t0\tthe MCP servers the agent uses\tmimi.mcp.client_commands:list_all(app)"
    "\nmcp_remove\tmcp_remove <name>\t1\t1\tforget an MCP server\tmimi.mcp.client_commands:remove(app)"
    "\nmcp_tools\tmcp_tools <name>\t1\t1\tthe tools an MCP server offers\tmimi.mcp.client_commands:tools(app)"
    "\n"
)


def setup(app):
    """The mcp_* console commands; their code (server_commands.py, client_commands.py) loads when typed. The
    client only when mcp.json lists a server (no server, no file): it, made now (parts.py) and started with the
    network services, which fetch the servers' tools; else None. The boot lets this module go after (LET_GO): its
    lines stay in flash, and a board that never uses MCP keeps none of it."""
    app.console.commands.add_lines(_COMMANDS)
    return app.part("mcp_client") if files.exists(files.join(app.flash.root, FILE_NAME)) else None
