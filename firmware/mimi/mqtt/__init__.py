# MQTT (Home Assistant, other boards): off unless a broker is set; the package's code loads only then.
NS = "mqtt_config"
BASE_PREFIX = "mimi/"

# name, usage, fewest args, most args, description; each loads mimi.mqtt.commands when typed
COMMANDS = (
    ("mqtt_set", "mqtt_set <host> [port]", 1, 2, "connect to an MQTT broker (Home Assistant, other boards)"),
    ("mqtt_auth", "mqtt_auth <user> <password> | mqtt_auth off", 1, 2, "the MQTT user and password"),
    ("mqtt_tls", "mqtt_tls on|off", 1, 1, "MQTT over TLS, the broker's certificate checked"),
    ("mqtt_status", "mqtt_status", 0, 0, "MQTT connection, topics, role and counters"),
    ("mqtt_off", "mqtt_off", 0, 0, "disconnect from the broker and keep MQTT off"),
    ("mqtt_role", "mqtt_role [role]", 0, 1, "role of MQTT messages: observer (default), operator or owner"),
    ("mqtt_discovery", "mqtt_discovery on|off", 1, 1, "announce the board to Home Assistant, or remove it"),
    ("mqtt_allow", "mqtt_allow [topic]", 0, 1, "let mqtt_publish write to a topic (+ and # allowed); no topic: list"),
    ("mqtt_deny", "mqtt_deny <topic>", 1, 1, "take a topic back from mqtt_publish"),
    ("mqtt_id", "mqtt_id [device_id]", 0, 1, "this board's name on MQTT (topics mimi/<id>/...)"),
)


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
    """The mqtt_* console commands always; the channel, its tool and its task only when a broker is set."""
    add = app.console.commands.add
    for name, usage, fewest, most, description in COMMANDS:
        add(name, _lazy(app, name), usage, fewest, most, description)
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
