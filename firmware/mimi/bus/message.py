# What travels on the bus: a channel, a chat and text, plus how the reply may be shown while it streams.
from mimi.bus.queue import Queue
from mimi.platform import const

QUEUE_DEPTH = const(8)

CHANNELS = ("telegram", "websocket", "cli", "system", "mqtt")


class Message:
    __slots__ = ("channel", "chat_id", "content", "meta")

    def __init__(self, channel, chat_id, content, meta=None):
        if channel not in CHANNELS:
            raise ValueError("unknown channel: {}".format(channel))
        self.channel = channel
        self.chat_id = str(chat_id)
        self.content = content
        self.meta = meta  # channel-specific extras (e.g. Telegram user id); never sent to the model

    def __repr__(self):
        return "Message({}:{}, {} chars)".format(self.channel, self.chat_id, len(self.content))


class Bus:
    """The inbound (channels -> agent) and outbound (agent -> channels) queues."""

    def __init__(self, depth=QUEUE_DEPTH):
        self.inbound = Queue(depth)
        self.outbound = Queue(depth)
