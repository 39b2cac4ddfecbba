# send_message: the agent writes to a chat on its own (from a cron or heartbeat turn, or another chat).
from mimi.bus.message import Message
from mimi.channels.system import TARGET_CHANNELS, check_reachable
from mimi.platform import const
from mimi.tools.registry import Tool, ToolError

TEXT_MAX = const(4000)  # characters of one message


class SendMessage(Tool):
    name = "send_message"
    tier, acting, level = "operator", True, "report"
    wants_turn = True  # the asker's chat may always be written to; the message says who asked
    description = (
        "Send a text message now to a chat: channel 'telegram' (chat_id = the user's id, only "
        "allowlisted users), 'websocket' (a web chat id), 'cli' (chat_id 'console') or 'mqtt' (chat_id = "
        "another board's device id: its agent answers and the answer comes back to this chat). Use it when "
        "a message must reach someone other than the chat you are answering."
    )
    schema = {
        "type": "object",
        "properties": {
            "channel": {"type": "string", "enum": list(TARGET_CHANNELS)},
            "chat_id": {"description": "the chat to write to (Telegram: the user id)"},
            "text": {"type": "string", "description": "the message"},
        },
        "required": ["channel", "chat_id", "text"],
    }

    async def run(self, input, turn):
        app, asker = self.app, turn.asker
        text = input["text"].strip()
        if not text:
            raise ToolError("the message text is empty")
        if len(text) > TEXT_MAX:
            raise ToolError("the message is longer than {} characters; shorten it".format(TEXT_MAX))
        try:
            channel, chat_id = check_reachable(app, (input["channel"], input["chat_id"]), asker)
        except ValueError as exc:
            raise ToolError(str(exc))
        if channel not in app.channels:
            raise ToolError("the {} channel is not running on this device".format(channel))
        if channel == "telegram" and not app.config.is_set("tg_config", "bot_token"):
            raise ToolError("Telegram is not set up on this device (no bot token)")
        meta = {"kind": "reply", "streamed": False,
                "request": {"source": "send_message", "asker": asker}}
        await app.bus.outbound.put(Message(channel, chat_id, text, meta))
        return "sent to {} chat {}".format(channel, chat_id)


TOOLS = (SendMessage,)
