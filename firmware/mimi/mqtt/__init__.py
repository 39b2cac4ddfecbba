# MQTT (Home Assistant, other boards): off unless a broker is set; the package's code loads only then.
# This boot part owns the settings' names and the board's topics; it never imports the channel, which App
# makes (parts.py) at the first app.part("mqtt") once a broker is set.
# This boot part itself is let go once the boot has added its lines (mimi/heap.py): its lines stay in flash.
LET_GO = ".:boot"
NS = "mqtt_config"
BASE_PREFIX = "mimi/"
# The console commands (channels/commands.py add_lines): a str constant stays in flash, not a table on the heap.
_COMMANDS = (
    "\nmqtt_set\tmqtt_set <host> [port]\t1\t2\tconnect to an MQTT broker (Home Assistant, other boards)"
    "\tmimi.mqtt.commands:cmd_set(app)"
    "\nmqtt_auth\tmqtt_auth <user> <password> | mqtt_auth off\t1\t2\tthe MQTT user and password"
    "\tmimi.mqtt.commands:cmd_auth(app)\t2"
    "\nmqtt_tls\tmqtt_tls on|off\t1\t1\tMQTT over TLS, the broker's certificate checked"
    "\tmimi.mqtt.commands:cmd_tls(app)"
    "\nmqtt_status\tmqtt_status\t0\t0\tMQTT connection, topics, role and counters"
    "\tmimi.mqtt.commands:cmd_status(app)"
    "\nmqtt_off\tmqtt_off\t0\t0\tdisconnect from the broker and keep MQTT off"
    "\tmimi.mqtt.commands:cmd_off(app)"
    "\nmqtt_role\tmqtt_role [role]\t0\t1\trole of MQTT messages: observer (default), operator or owner"
    "\tmimi.mqtt.commands:cmd_role(app)"
    "\nmqtt_discovery\tmqtt_discovery on|off\t1\t1\tannounce the board to Home Assistant, or remove it"
    "\tmimi.mqtt.commands:cmd_discovery(app)"
    "\nmqtt_allow\tmqtt_allow [topic]\t0\t1\tlet mqtt_publish write to a topic (+ and # allowed); no topic: list"
    "\tmimi.mqtt.commands:cmd_allow(app)"
    "\nmqtt_deny\tmqtt_deny <topic>\t1\t1\ttake a topic back from mqtt_publish"
    "\tmimi.mqtt.commands:cmd_deny(app)"
    "\nmqtt_id\tmqtt_id [device_id]\t0\t1\tthis board's name on MQTT (topics mimi/<id>/...)"
    "\tmimi.mqtt.commands:cmd_id(app)"
    "\n"
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


def setup(app):
    """The mqtt_* console commands always; the channel, its tool and its task only when a broker is set: the
    channel (made now, parts.py, and started with the other services), else None."""
    app.console.commands.add_lines(_COMMANDS)  # each loads mimi.mqtt.commands when typed
    return app.part("mqtt")
