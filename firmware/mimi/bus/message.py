# What travels on the bus: a channel, a chat and text, plus how the reply may be shown while it streams.
from mimi.bus.queue import Queue
from mimi.platform import const

_QUEUE_DEPTH = const(8)

# The channels, named once: a message's channel is one of them (a channel's name, sessions' file names)
TELEGRAM, WEBSOCKET, CLI, SYSTEM, MQTT, MCP = "telegram", "websocket", "cli", "system", "mqtt", "mcp"
MATRIX, DISCORD = "matrix", "discord"
CHANNELS = (TELEGRAM, WEBSOCKET, CLI, SYSTEM, MQTT, MCP, MATRIX, DISCORD)


class Message:
    __slots__ = ("channel", "chat_id", "text", "meta")

    def __init__(self, channel, chat_id, content, meta=None):
        if channel not in CHANNELS:
            raise ValueError("unknown channel: {}".format(channel))
        self.channel = channel
        self.chat_id = str(chat_id)
        self.text = content  # a str, or a reply's pieces (llm/text.py Text) until content is read
        self.meta = meta if isinstance(meta, dict) else {}  # a channel's extras (a Telegram user id...); never sent
        # to the model: always a dict here, so no reader checks it again

    @property
    def content(self):
        """The text as one str: a reply's pieces are joined here, by the channel that needs them so."""
        if not isinstance(self.text, str):
            self.text = str(self.text)
        return self.text

    def __repr__(self):
        return "Message({}:{}, {} chars)".format(self.channel, self.chat_id, len(self.text))


class Bus:
    """The inbound (channels -> agent) and outbound (agent -> channels) queues."""

    def __init__(self, depth=_QUEUE_DEPTH):
        self.inbound = Queue(depth)
        self.outbound = Queue(depth)
