# The MCP server's settings: the role its clients act with, and the console commands set_mcp_token and mcp_role
# (imported when one is typed, or with the server's first tool call).
from mimi import platform
from mimi.gateway import auth
from mimi.mcp import NS
from mimi.safety import roles

_TOKEN_KEY, _ROLE_KEY = "token", "role"
_WHAT_ROLES_MAY = (
    "\n  observer: reading tools only (time, files but the owner's memory, system) and ask"
    "\n  operator: also GPIO, cron, the web and messages (tools set to confirm are still refused)"
    "\n  owner:    also files, memory (its resources too) and watchers: everything the console may do\n")


def role_of(config):
    """The role MCP clients' calls act with (mcp_role); an unknown stored value is the least trusted role."""
    role = config.get(NS, _ROLE_KEY)
    return role if role in roles.ROLES else roles.OBSERVER


def set_token(app, token):
    """set_mcp_token <token|off>: the Bearer token MCP clients present; off: the web chat's token."""
    config = app.config
    if token == auth.OFF:
        config.unset(NS, _TOKEN_KEY)
        if auth.current(config) == auth.OFF:
            platform.console_write("MCP token off, and the web chat's token is off too: anyone who reaches the "
                                   "gateway's port may use /mcp (as {})\n".format(role_of(config)))
        else:
            platform.console_write("MCP token off: MCP clients present the web chat's token (ws_token shows it)\n")
        return
    config.set(NS, _TOKEN_KEY, token)  # the token's rule: its setting's kind (settings/values.py)
    platform.console_write("MCP token saved: MCP clients send it as 'Authorization: Bearer <token>' "
                           "(the web chat's token no longer opens /mcp; sessions opened with another ended)\n")


def set_role(app, role=None):
    """mcp_role [role]: show or set the role MCP clients' tool calls (and ask's turns) act with."""
    config = app.config
    if role is None:
        platform.console_write("mcp_role: {}{}".format(role_of(config), _WHAT_ROLES_MAY))
        return
    if role not in roles.ROLES:
        raise ValueError("role must be one of {}, not {!r}".format(", ".join(roles.ROLES), role))
    config.set(NS, _ROLE_KEY, role)
    platform.console_write("mcp_role = {} (saved; MCP clients' next calls act with it)\n".format(role))
