# The mqtt_* console commands (loaded when one is typed).
import asyncio

from mimi import mqtt, platform
from mimi.settings import mask
from mimi.mqtt import messages, packets
from mimi.safety import roles

_STOP_WAIT_S = 3
_ON_OFF = {"on": 1, "off": 0}


def _say(text):
    platform.console_write(text + "\n")


def _get(app, key):
    return app.config.get(mqtt.NS, key)


def _set(app, key, value):
    app.config.set(mqtt.NS, key, value)


def _switch(word, usage):
    if word not in _ON_OFF:
        raise ValueError("usage: " + usage)
    return _ON_OFF[word]


async def cmd_set(app, host, port=None):
    host = host.strip()
    if not host or "/" in host or " " in host:
        raise ValueError("give the broker's host name or IP address, like mqtt_set 192.168.1.10")
    if port is not None:
        _set(app, "port", port)
    _set(app, "host", host)
    channel = app.part("mqtt")  # made and started now (parts.py); else it wakes to the new settings
    held = app.health.held_back(channel)  # safe mode: it does not run on this boot
    saved = "MQTT broker {}:{} saved{}".format(host, channel.port(), " (TLS)" if _get(app, "tls") else "")
    if held:
        _say("{}; MQTT starts after a normal boot: {}".format(saved, held))
    else:
        _say("{}; connecting as {} (mqtt_status shows how it goes)".format(saved, channel.base()))


async def cmd_auth(app, user, password=None):
    if password is None:
        if user != "off":
            raise ValueError("usage: mqtt_auth <user> <password> | mqtt_auth off")
        app.config.unset(mqtt.NS, "password")
        app.config.unset(mqtt.NS, "user")
        _say("MQTT user and password removed (the broker must allow anonymous clients)")
        return
    _set(app, "user", user)
    _set(app, "password", password)
    _say("MQTT user {} saved (password {}); in effect now".format(user, mask(password, True)))


async def cmd_tls(app, word):
    _set(app, "tls", _switch(word, "mqtt_tls on|off"))
    port = _get(app, "port")
    _say("MQTT over TLS {}{}".format(word, "" if port else " (port {})".format(8883 if word == "on" else 1883)))


async def cmd_status(app):
    if app.part("mqtt") is None:
        _say("MQTT: off (mqtt_set <host> [port] connects to a broker; device id {})".format(
            mqtt.device_id(app.config)))
        return
    ch = app.part("mqtt")
    held = app.health.held_back(ch)
    if ch.client.connected:
        shown = "connected to {}{}".format(ch.where, " (TLS)" if _get(app, "tls") else "")
    elif not mqtt.configured(app.config):
        shown = "off (mqtt_set <host> [port])"
    elif held:
        shown = "not started on this boot: " + held
    else:
        shown = "connecting to {}:{}{}".format(_get(app, "host"), ch.port(),
                                               "; last problem: " + ch.error if ch.error else "")
    _say("MQTT: " + shown)
    user = _get(app, "user")
    _say("  user: {}, password {}".format(user or "(none)", mask(_get(app, "password"), True) if user else "(none)"))
    _say("  topics: {}/in (messages to me), /out (answers), /state, /availability".format(ch.base()))
    _say("  MQTT messages act as: {}; Home Assistant discovery: {}".format(
        ch.role(), "on" if _get(app, "discovery") else "off"))
    _say("  mqtt_publish may write to: {}".format(_get(app, "publish_allow") or "nothing (mqtt_allow)"))
    _say("  {} received, {} answered, {} waiting for the broker's ack, {} watched topics".format(
        ch.received, ch.answered, len(ch.client.pending), len(ch.watched)))


async def cmd_off(app):
    channel = app.part("mqtt")
    if not mqtt.configured(app.config):
        _say("MQTT is already off")
        return
    app.config.unset(mqtt.NS, "host")  # the channel says offline, disconnects and idles
    for _ in range(_STOP_WAIT_S * 10):
        if channel is None or not channel.running:
            break
        await asyncio.sleep(0.1)
    _say("MQTT off: disconnected (settings kept; mqtt_set <host> connects again)")


async def cmd_role(app, role=None):
    if role is None:
        _say("MQTT messages act as {} (mqtt_role observer|operator|owner)".format(_get(app, "role")))
        return
    if role not in roles.ROLES:
        raise ValueError("role must be one of {}".format(", ".join(roles.ROLES)))
    _set(app, "role", role)
    warning = ""
    if role == roles.OWNER:
        warning = "; careful: anyone who may publish to {}/in now owns this device".format(mqtt.base(app.config))
    _say("MQTT messages now act as {}{}".format(role, warning))


async def cmd_discovery(app, word):
    _set(app, "discovery", _switch(word, "mqtt_discovery on|off"))
    if word == "on":
        _say("Home Assistant discovery on: the board appears as device 'Mimi {}'".format(mqtt.device_id(app.config)))
    else:
        _say("Home Assistant discovery off: the board's entities are removed from Home Assistant")


def _allowed(app):
    return [t for t in _get(app, "publish_allow").split(",") if t]


async def cmd_allow(app, topic=None):
    topics = _allowed(app)
    if topic is not None:
        packets.check_topic(topic, wildcards=True)
        if "," in topic:
            raise ValueError("a topic cannot hold a comma here")
        if topic not in topics:
            topics.append(topic)
            _set(app, "publish_allow", ",".join(topics))
    _say("mqtt_publish may write to: {}".format(", ".join(topics) or "nothing yet (mqtt_allow <topic>)"))


async def cmd_deny(app, topic):
    topics = _allowed(app)
    if topic in topics:
        topics.remove(topic)
        _set(app, "publish_allow", ",".join(topics))
        _say("{} taken back; mqtt_publish may write to: {}".format(topic, ", ".join(topics) or "nothing"))
    else:
        _say("{} was not allowed".format(topic))


async def cmd_id(app, device_id=None):
    if device_id is not None:
        _set(app, "device_id", messages.check_device_id(device_id))
    _say("MQTT device id: {} (topics {}/...)".format(mqtt.device_id(app.config), mqtt.base(app.config)))
