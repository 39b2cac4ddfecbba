# Home Assistant MQTT discovery: the retained configs that make the board a device with sensors, a text and a notify.
from mimi import VERSION
from mimi.platform import const

TEXT_MAX = const(255)  # Home Assistant's limit for a text entity's value

# (component, object id, name, state field or None, extra keys). Sensors read the retained state JSON.
ENTITIES = (
    ("sensor", "heap", "Free heap", "heap_free",
     {"unit_of_measurement": "B", "device_class": "data_size", "state_class": "measurement",
      "entity_category": "diagnostic"}),
    ("sensor", "uptime", "Uptime", "uptime_s",
     {"unit_of_measurement": "s", "device_class": "duration", "state_class": "measurement",
      "entity_category": "diagnostic"}),
    ("sensor", "rssi", "WiFi signal", "rssi_dbm",
     {"unit_of_measurement": "dBm", "device_class": "signal_strength", "state_class": "measurement",
      "entity_category": "diagnostic"}),
    ("sensor", "tokens_today", "Tokens today", "tokens_today",
     {"unit_of_measurement": "tokens", "state_class": "total_increasing", "icon": "mdi:counter"}),
    ("sensor", "last_reply", "Last reply", "last_reply", {"icon": "mdi:message-reply-text"}),
    ("sensor", "last_error", "Last error", "last_error", {"icon": "mdi:alert", "entity_category": "diagnostic"}),
    ("text", "ask", "Ask", None, {"mode": "text", "min": 0, "max": TEXT_MAX, "icon": "mdi:chat"}),
    ("notify", "notify", "Message", None, {}),
)


def topic(prefix, component, device_id, object_id):
    return "{}/{}/{}/{}/config".format(prefix, component, device_id, object_id)


def configs(prefix, device_id, base):
    """(topic, config dict) for each entity, one at a time (each is a few hundred bytes)."""
    device = {"identifiers": ["mimi_" + device_id], "name": "Mimi " + device_id, "model": "ESP32-S3",
              "manufacturer": "MimiClaw-Py", "sw_version": VERSION}
    for component, object_id, name, field, extra in ENTITIES:
        config = {
            "name": name,
            "unique_id": "mimi_{}_{}".format(device_id, object_id),
            "availability_topic": base + "/availability",
            "payload_available": "online",
            "payload_not_available": "offline",
            "device": device,
            "origin": {"name": "MimiClaw-Py", "sw_version": VERSION},
        }
        if field is not None:
            config["state_topic"] = base + "/state"
            config["value_template"] = "{{ value_json.%s }}" % field
        else:  # what Home Assistant publishes here is plain text: the channel takes it as a message
            config["command_topic"] = base + "/in"
            config["qos"] = 1
        for key in extra:
            config[key] = extra[key]
        yield topic(prefix, component, device_id, object_id), config


def topics(prefix, device_id):
    """Every config topic: publishing an empty retained message to each removes the device."""
    return [topic(prefix, entity[0], device_id, entity[1]) for entity in ENTITIES]
