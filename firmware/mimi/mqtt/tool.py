# mqtt_publish: the agent publishes to a topic the owner allowed (mqtt_allow), QoS 1; an acting tool like gpio_write.
from mimi import mqtt
from mimi.mqtt import packets
from mimi.platform import const
from mimi.tools.registry import Tool, ToolError

_PAYLOAD_MAX = const(4096)  # bytes of one message


def allowed(config, topic):
    for topic_filter in config.get(mqtt.NS, "publish_allow").split(","):
        if topic_filter and packets.matches(topic_filter, topic):
            return True
    return False


class MqttPublish(Tool):
    """Made with the channel (parts.py) and added to the registry then."""

    name = "mqtt_publish"
    description = (
        "Publish a message to an MQTT topic the owner allowed (e.g. a Home Assistant or Zigbee2MQTT command "
        "topic such as zigbee2mqtt/lamp/set with payload {\"state\": \"ON\"}). Only exact topics matching the "
        "owner's mqtt_allow list are accepted."
    )
    schema = {
        "type": "object",
        "properties": {
            "topic": {"type": "string", "description": "the topic, without wildcards"},
            "payload": {"type": "string", "description": "the message (text or JSON)"},
            "retain": {"type": "boolean", "description": "keep it as the topic's last value (default false)"},
        },
        "required": ["topic", "payload"],
    }
    # like gpio_write: operators and the owner (observers are refused); it changes things in the home, so it
    # is reported (or confirmed, blocked) per tool_policy
    tier, acting, level = "operator", True, "report"

    async def run(self, input):
        app = self.app
        topic, payload = input["topic"].strip(), input["payload"]
        try:
            packets.check_topic(topic)
        except ValueError as exc:
            raise ToolError(str(exc))
        if not allowed(app.config, topic):
            raise ToolError("{} is not a topic the owner allowed; the owner can allow it on the console with "
                            "'mqtt_allow {}'".format(topic, topic))
        data = payload.encode()
        if len(data) > _PAYLOAD_MAX:
            raise ToolError("the payload is over {} bytes".format(_PAYLOAD_MAX))
        channel = app.part("mqtt")
        acked = await channel.publish(topic, data, bool(input.get("retain"))) if channel is not None else None
        if acked is None:
            raise ToolError("not connected to the MQTT broker; nothing was published")
        if not acked:
            raise ToolError("sent to {}, but the broker has not acknowledged it yet; it is sent again after a "
                            "reconnect".format(topic))
        return "published to {} ({} bytes), acknowledged by the broker".format(topic, len(data))
