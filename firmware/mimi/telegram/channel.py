# The `telegram` channel at boot: its console commands (their code, telegram/allowlist.py, loaded at the first one
# typed) and the bot itself (telegram/bot.py: Bot API, polling, replies, buttons) only once there is a bot token,
# a waiting reply or a message to send. A board without a token holds only this.
import asyncio

from mimi.storage import files
from mimi.telegram import OUTBOX_FILE

# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\ntg_allow\ttg_allow <user_id> [role]\t1\t2"
    "\tlet a Telegram user talk to the bot (role: owner, operator (default) or observer)"
    "\tmimi.telegram.allowlist:cmd_allow(app)"
    "\ntg_role\ttg_role <user_id> <role>\t2\t2"
    "\tchange an allowed user's role: owner, operator or observer\tmimi.telegram.allowlist:cmd_role(app)"
    "\ntg_deny\ttg_deny <user_id>\t1\t1\tremove a Telegram user\tmimi.telegram.allowlist:cmd_deny(app)"
    "\ntg_allowlist\ttg_allowlist\t0\t0\twho may talk to the bot, with roles"
    "\tmimi.telegram.allowlist:cmd_allowlist(app)"
    "\n"
)
# What the agent, the dispatcher and the safety policy call on a channel: here, the bot's (bot.py) methods.
_BOT_CALLS = ("send", "on_start", "on_delta", "on_tool", "confirm")


class Telegram:
    def __init__(self, app):
        self.app = app
        self._bot = None  # telegram/bot.py's Bot, made at its first need (a board without a bot has none)
        self._made = asyncio.Event()
        app.channels["telegram"] = self
        app.services.append(self)
        app.config.subscribe(self._on_config)
        app.console.commands.add_lines(_COMMANDS)
        # A bot to run, or replies from before the reboot still to deliver (outbox.py's file; emptied, it holds "[]")
        if app.config.is_set("tg_config", "bot_token") or files.size(files.join(app.flash.root, OUTBOX_FILE)) > 2:
            self.bot()

    def bot(self):
        """The bot at work (telegram/bot.py), made once: its service starts now if this one already runs."""
        if self._bot is None:
            from mimi.telegram.bot import Bot

            self._bot = Bot(self)
            self._made.set()
        return self._bot

    def _on_config(self, ns, key):
        if ns != "tg_config":
            return
        if self._bot is not None:
            self._bot.on_config(key)
        elif key == "bot_token" and self.app.config.is_set(ns, key):
            self.bot()  # the token arrived: the poller starts with it

    async def run(self):
        greet = self._bot is not None  # getMe only for a bot already set up when the service starts
        await self._made.wait()
        await self._bot.run(greet)

    # -- the channel, called by the agent, the dispatcher and the safety policy (a reply makes the bot) --
    def __getattr__(self, name):  # only for attributes not set: the bot's calls, made at their first use
        if name not in _BOT_CALLS:
            raise AttributeError(name)

        async def call(*args):
            return await getattr(self.bot(), name)(*args)

        return call
