# The app's optional parts (cron, watchers, heartbeat, MQTT, the MCP client), made at the first App.part(name)
# and wired in, and network services started late: loaded in a part's scope (App.part, App.start_late) and let
# go after it (mimi/__init__.py LET_GO).

from mimi import discord, matrix, mqtt


def made(app, name):
    """app.<name> made, wired in (its channel, its guards), kept on the app and started (start_late); app.mqtt
    is None, and nothing of MQTT loaded, while no broker is set. AttributeError for any other name."""
    if name == "cron":
        from mimi.cron.service import Cron as make
    elif name == "watchers":
        from mimi.watch.service import Watchers as make
    elif name == "heartbeat":
        from mimi.agent.heartbeat import Heartbeat as make
    elif name == "mqtt":
        if not mqtt.configured(app.config):
            return None  # off until a broker is set (mqtt_set)
        from mimi.mqtt import tool
        from mimi.mqtt.channel import MQTT as make

        app.registry.add(tool.MqttPublish(app))  # mqtt_publish comes with the channel
    elif name == "matrix":
        if not matrix.configured(app.config):
            return None  # off until the board is logged in (matrix_set)
        from mimi.matrix.channel import Matrix as make
    elif name == "discord":
        if not discord.configured(app.config):
            return None  # off until a bot token is set (discord_set)
        from mimi.discord.channel import Discord as make
    elif name == "mcp_client":
        from mimi.mcp.client_service import Clients as make
    else:
        raise AttributeError(name)
    part = make(app)
    setattr(app, name, part)
    if name in ("mqtt", "matrix", "discord"):
        app.add_channel(part)
    elif name == "watchers":
        _wire_watchers(app, part)
    start_late(app, part)
    return part


def _wire_watchers(app, watchers):
    """The watchers' caps guard every tool call; the system channel hands them its turns' answers."""
    app.registry.approvers.append(watchers.limits)
    app.registry.guards.append(watchers.limits)
    app.system.watchers = watchers


def start_late(app, service):
    """Run a network service made after boot began, once: it joins app.services and starts with them, or at
    once (its task kept in app.tasks) when they already run. Safe mode runs the gateway only: then nothing
    starts and the return is why (health.held_back); None when the service runs or will."""
    held = app.health.held_back(service)
    if service not in app.services:
        app.add_service(service)
        if held is None and (app.services_started or getattr(service, "offline", False) and app.core_started):
            app.start(service)  # an offline service (local rules) needs no network
    return held
