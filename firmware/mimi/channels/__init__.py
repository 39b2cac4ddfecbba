# channels layer: every way a message comes in and a reply goes out. Channel is what each of them is to the agent,
# the dispatcher and the safety policy; the app (app.py) makes them and adds them to its channels by name.

# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it: the console's own
# commands, help and config_show, after each command typed.
LET_GO = "console_commands:command console_help:command"


class Channel:
    """send(message) every channel has. A channel that shows a reply while it streams sets streams and has
    on_start (a turn begins), on_delta (a piece of text) and on_tool (a tool runs); one that can ask its user a
    yes/no question has confirm(question, seconds) (None: no such question here)."""

    name = None  # what the bus's messages call it (bus/message.py CHANNELS)
    streams = False
    confirm = None

    async def send(self, message):
        raise NotImplementedError

    async def on_start(self, chat_id):
        pass

    async def on_delta(self, chat_id, text):
        pass

    async def on_tool(self, chat_id, name):
        pass
