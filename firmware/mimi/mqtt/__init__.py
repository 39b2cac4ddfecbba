# MQTT (Home Assistant, other boards): off unless a broker is set; the package's code loads only then.
NS = "mqtt_config"
BASE_PREFIX = "mimi/"


def configured(config):
    return bool(config.get(NS, "host"))


def device_id(config):
    """The board's MQTT name: mqtt_config.device_id, else mimi-<last 3 bytes of the chip id>."""
    chosen = config.get(NS, "device_id")
    if chosen:
        return chosen
    import machine

    return "mimi-" + "".join("{:02x}".format(b) for b in machine.unique_id()[-3:])


def base(config):
    return BASE_PREFIX + device_id(config)


def _lazy(app, name):
    async def handler(*args):
        from mimi.mqtt import commands

        await getattr(commands, "cmd_" + name[5:])(app, *args)

    return handler


def setup(app):
    """The mqtt_* console commands always; the channel, its tool and its task only when a broker is set.
    The commands are calls, not a table: a tuple of rows would stay on the heap (the heap diet)."""
    add = app.console.commands.add  # each loads mimi.mqtt.commands when typed
    add("mqtt_set", _lazy(app, "mqtt_set"), "mqtt_set <host> [port]", 1, 2,
        "connect to an MQTT broker (Home Assistant, other boards)")
    add("mqtt_auth", _lazy(app, "mqtt_auth"), "mqtt_auth <user> <password> | mqtt_auth off", 1, 2,
        "the MQTT user and password")
    add("mqtt_tls", _lazy(app, "mqtt_tls"), "mqtt_tls on|off", 1, 1,
        "MQTT over TLS, the broker's certificate checked")
    add("mqtt_status", _lazy(app, "mqtt_status"), "mqtt_status", 0, 0,
        "MQTT connection, topics, role and counters")
    add("mqtt_off", _lazy(app, "mqtt_off"), "mqtt_off", 0, 0,
        "disconnect from the broker and keep MQTT off")
    add("mqtt_role", _lazy(app, "mqtt_role"), "mqtt_role [role]", 0, 1,
        "role of MQTT messages: observer (default), operator or owner")
    add("mqtt_discovery", _lazy(app, "mqtt_discovery"), "mqtt_discovery on|off", 1, 1,
        "announce the board to Home Assistant, or remove it")
    add("mqtt_allow", _lazy(app, "mqtt_allow"), "mqtt_allow [topic]", 0, 1,
        "let mqtt_publish write to a topic (+ and # allowed); no topic: list")
    add("mqtt_deny", _lazy(app, "mqtt_deny"), "mqtt_deny <topic>", 1, 1,
        "take a topic back from mqtt_publish")
    add("mqtt_id", _lazy(app, "mqtt_id"), "mqtt_id [device_id]", 0, 1,
        "this board's name on MQTT (topics mimi/<id>/...)")
    app.mqtt = None
    if configured(app.config):
        start(app, at_boot=True)


def start(app, at_boot=False):
    """Create the channel (once) and run it: at boot with the other network services, later at once."""
    channel = app.mqtt
    if channel is None:
        from mimi.mqtt import tool
        from mimi.mqtt.channel import MQTT

        channel = MQTT(app)
        tool.setup(app)
        app.registry.add(tool)
    if at_boot:
        app.services.append(channel)
    elif not channel.running:  # else the running task sees the new settings itself
        import asyncio

        channel.task = asyncio.create_task(channel.run())
    return channel
