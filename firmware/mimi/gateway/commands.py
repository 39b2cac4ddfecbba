# The gateway's console commands: status's gateway line, ws_token, set_ws_token, set_ws_port, ws_role,
# ws_open_role (imported when one is typed; gateway/server.py lists them).
from mimi import platform
from mimi.gateway import CLIENTS_MAX, TOKEN_KEY, TOKEN_NS, auth


async def cmd_status(gateway):
    await gateway.console_status()
    if gateway.port is None:
        place = "not listening"
    else:
        place = "listening on port {}".format(gateway.port)
    clients = len(gateway.sessions.clients) if gateway.sessions is not None else 0
    platform.console_write("  Gateway: {}, {} of {} clients\n".format(place, clients, CLIENTS_MAX))


async def cmd_token(gateway):
    token = auth.current(gateway.app.config)
    if token == auth.OFF:
        platform.console_write("gateway token: off (anyone on the network may chat, as {})\n"
                               "web chat: {}\n".format(_role(gateway, "ws_open_role"), gateway.address()))
        return
    platform.console_write("gateway token: {}\nweb chat: {}?token={}\n".format(
        token, gateway.address(), token))


async def cmd_set_token(gateway, token):
    config = gateway.app.config
    config.set(TOKEN_NS, TOKEN_KEY, token)  # the token's rule: its setting's kind (settings/values.py)
    # the clients connected with the old token were closed as it was saved (gateway/clients.py)
    if config.get(TOKEN_NS, TOKEN_KEY) == auth.OFF:
        platform.console_write("gateway token off: anyone who reaches port {} may chat, as {} (ws_open_role); "
                               "clients connected with the token were closed\n"
                               .format(config.get("gw_config", "ws_port"), _role(gateway, "ws_open_role")))
    else:
        platform.console_write("gateway token saved; every connection needs it: those opened with the old one "
                               "were closed\n")


async def cmd_set_port(gateway, port):
    config = gateway.app.config
    config.set("gw_config", "ws_port", port)  # over a runner's --ws-port too, from now on (settings/)
    wanted = config.get("gw_config", "ws_port")
    if gateway.port is None or gateway.port == wanted:
        platform.console_write("gw_config.ws_port = {} (saved)\n".format(wanted))
    else:
        platform.console_write("gw_config.ws_port = {} (saved; the gateway moves now; "
                               "connected clients stay)\n".format(wanted))
        gateway.restart()


_WHAT_ROLES_MAY = (
    "\n  observer: chat, reading tools only; its own chats; none of the web app's views"
    "\n  operator: also GPIO, cron, the web and messages; its own chats; none of the views"
    "\n  owner:    everything the console may do, every chat and the web app's views\n")


def _role(gateway, key):
    from mimi.gateway import guard

    return guard.role(gateway.app.config, key)


def _set_role(gateway, key, role, who):
    if role is None:
        platform.console_write("{}: {}{}".format(key, _role(gateway, key), _WHAT_ROLES_MAY))
        return
    gateway.app.config.set("gw_config", key, role)  # the row's words: observer, operator or owner
    platform.console_write("{} = {} (saved; {} act with it now, those connected too)\n".format(
        key, gateway.app.config.get("gw_config", key), who))


async def cmd_role(gateway, role=None):
    """ws_role [role]: show or set the role of web chat clients that present the token."""
    _set_role(gateway, "ws_role", role, "clients with the token")


async def cmd_open_role(gateway, role=None):
    """ws_open_role [role]: show or set the role of web chat clients while the token is off."""
    _set_role(gateway, "ws_open_role", role, "clients without a token (while it is off)")
