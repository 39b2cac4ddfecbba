# The `system` channel: turns started by the device itself (cron, heartbeat) answer in a real chat.
from mimi.bus.message import CLI, DISCORD, MATRIX, MQTT, SYSTEM, TELEGRAM, WEBSOCKET, Message
from mimi.channels import Channel
from mimi.platform import const, log

HEARTBEAT_OK = "HEARTBEAT_OK"
TARGET_CHANNELS = (TELEGRAM, WEBSOCKET, CLI, MQTT, MATRIX, DISCORD)  # where a system turn's answer may go
CONSOLE_TARGET = (CLI, "console")
CHAT_ID_MAX = const(64)
_SEPARATOR = ":"
_OK_TRIM = " \t\r\n.!`*_\"'"  # "HEARTBEAT_OK." or "**HEARTBEAT_OK**" still count as silence


def check_target(channel, chat_id):
    """(channel, chat_id) as str, or ValueError saying what is wrong with them."""
    if channel not in TARGET_CHANNELS:
        raise ValueError("channel must be one of {}, not {!r}".format(", ".join(TARGET_CHANNELS), channel))
    chat_id = str(chat_id).strip()
    if not chat_id or len(chat_id) > CHAT_ID_MAX:
        raise ValueError("chat_id must be 1 to {} characters".format(CHAT_ID_MAX))
    if channel == TELEGRAM:
        digits = chat_id[1:] if chat_id.startswith("-") else chat_id
        if not digits.isdigit():
            raise ValueError("a Telegram chat_id is a number, like 123456789")
    if channel == MQTT:  # an MQTT chat is a board's device id (this board's own: its `out` topic)
        from mimi.mqtt.messages import check_device_id

        chat_id = check_device_id(chat_id)
    return channel, chat_id


def check_reachable(app, target, requesting):
    """ValueError unless the device may write to target: the chat being served, the console, a
    gateway chat, or a Telegram user on the allowlist (the model must not write to strangers)."""
    channel, chat_id = check_target(target[0], target[1])
    if (channel, chat_id) == tuple(requesting) or channel != TELEGRAM:
        return channel, chat_id
    from mimi.telegram.allowlist import parse_allowlist

    if int(chat_id) not in parse_allowlist(app.config.get("tg_config", "allowlist")):
        raise ValueError("Telegram chat {} is not an allowlisted user; the owner adds one with tg_allow <id>"
                         .format(chat_id))
    return channel, chat_id


def encode_target(channel, chat_id):
    """The chat_id of a system message that answers in (channel, chat_id): "telegram:42"."""
    return channel + _SEPARATOR + str(chat_id)


def decode_target(text):
    """(channel, chat_id) from "telegram:42"; ValueError when it does not name a valid target."""
    channel, sep, chat_id = str(text).partition(_SEPARATOR)
    if not sep:
        raise ValueError("not a system target: {!r}".format(text))
    return check_target(channel, chat_id)


def requesting_chat(channel, chat_id):
    """The chat a turn's tool calls come from, seen through system turns: (channel, chat_id) of the turn
    itself, the chat a system turn answers in, or the console when unknown (tools/turn.py Turn.asker)."""
    if channel == SYSTEM:
        try:
            return decode_target(chat_id)
        except ValueError:
            return CONSOLE_TARGET
    if channel in TARGET_CHANNELS and chat_id:
        return channel, str(chat_id)
    return CONSOLE_TARGET


def is_heartbeat_ok(text):
    return str(text).strip(_OK_TRIM) == HEARTBEAT_OK


def system_message(target, content, meta):
    """An inbound Message for the agent that will answer in `target` (a (channel, chat_id) pair).

    meta keys read here: "source" (cron, heartbeat...), "session" (see the agent), "on_reply"
    (optional callable(text, kind), told the outcome), "quiet_errors" (errors only logged).
    """
    meta = dict(meta)
    meta["target"] = target
    return Message(SYSTEM, encode_target(target[0], target[1]), content, meta)


class SystemChannel(Channel):
    """Forwards the agent's answer to a system turn to its target chat; HEARTBEAT_OK is dropped. A watcher's
    turn is answered to the watchers (watchers: the service, given by the app once it is made)."""

    name = SYSTEM

    def __init__(self, app):
        self.app = app
        self.forwarded = 0
        self.silenced = 0
        self.watchers = None

    async def send(self, message):
        meta = message.meta
        request = meta.get("request") or {}
        if self.watchers is not None and request.get("watcher") is not None:
            await self.watchers.judged_reply(message)  # a watcher's reading judged: the service records it
            return
        kind = meta.get("kind") or "reply"
        source = request.get("source") or SYSTEM
        try:
            if kind != "error" and is_heartbeat_ok(message.content):
                self.silenced += 1
                return
            if kind == "refused":  # a budget or rate stop: the owner has been told once; no repeats per job
                log("{}: not run: {}".format(source, message.content))
                return
            if kind == "error" and request.get("quiet_errors"):
                log("{}: the turn failed: {}".format(source, message.content))
                return
            target = request.get("target") or decode_target(message.chat_id)
            await self._forward(target, message.content, kind, source)
        finally:
            on_reply = request.get("on_reply")
            if on_reply is not None:
                on_reply(message.content, kind)

    async def _forward(self, target, text, kind, source):
        channel = self.app.channels.get(target[0])
        if channel is None or channel is self:
            log("{}: no channel '{}' to deliver to {}".format(source, target[0], target[1]))
            return
        # Called from the dispatcher: deliver directly, since queueing on outbound could wait on ourselves.
        meta = {"kind": kind, "streamed": False, "request": {"source": source}}
        reply = Message(target[0], target[1], text, meta)
        await channel.send(reply)
        self.forwarded += 1
