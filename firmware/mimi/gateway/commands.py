# The gateway's console commands: status's gateway line, ws_token, set_ws_token, set_ws_port (imported when
# one is typed; gateway/server.py lists them).
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
        platform.console_write("gateway token: off (anyone on the network may chat)\n"
                               "web chat: {}\n".format(gateway.address()))
        return
    platform.console_write("gateway token: {}\nweb chat: {}?token={}\n".format(
        token, gateway.address(), token))


async def cmd_set_token(gateway, token):
    config = gateway.app.config
    config.set(TOKEN_NS, TOKEN_KEY, token)  # the token's rule: its setting's kind (config_check.py)
    if config.get(TOKEN_NS, TOKEN_KEY) == auth.OFF:
        platform.console_write("gateway token off: anyone who reaches port {} may chat\n"
                               .format(config.get("gw_config", "ws_port")))
    else:
        platform.console_write("gateway token saved; new connections need it "
                               "(clients already connected stay)\n")


async def cmd_set_port(gateway, port):
    config = gateway.app.config
    config.set("gw_config", "ws_port", port)
    wanted = config.get("gw_config", "ws_port")
    saved = int(port)  # a whole number: config.set checked it
    if wanted != saved:
        platform.console_write("gw_config.ws_port = {} saved; this run keeps port {} from the "
                               "command line (--ws-port)\n".format(saved, wanted))
    elif gateway.port is None or gateway.port == wanted:
        platform.console_write("gw_config.ws_port = {} (saved)\n".format(wanted))
    else:
        platform.console_write("gw_config.ws_port = {} (saved; the gateway moves now; "
                               "connected clients stay)\n".format(wanted))
        gateway.restart()
