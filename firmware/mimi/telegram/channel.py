# The `telegram` channel at boot: its console commands (their code, telegram/allowlist.py, loaded at the first one
# typed) and the bot itself (telegram/bot.py: Bot API, polling, replies, buttons) only once there is a bot token,
# a waiting reply or a message to send. A board without a token holds only this.
import asyncio

from mimi.bus.message import TELEGRAM
from mimi.channels import Channel
from mimi.storage import files
from mimi.telegram import OUTBOX_FILE

# The console commands (channels/commands.py add_lines): a str constant stays in flash.
COMMANDS = (
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


class Telegram(Channel):
    """The `telegram` channel and its service; app.py adds them and the console commands (COMMANDS). Its calls
    are the bot's (bot.py), made at the first one that needs it."""

    name = TELEGRAM
    streams = True

    def __init__(self, app):
        self.app = app
        self._bot = None  # telegram/bot.py's Bot, made at its first need (a board without a bot has none)
        self._made = asyncio.Event()
        app.config.subscribe(self._on_config)
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

    # -- the channel (a reply makes the bot) --
    async def send(self, message):
        await self.bot().send(message)

    async def on_start(self, chat_id):
        await self.bot().on_start(chat_id)

    async def on_delta(self, chat_id, text):
        await self.bot().on_delta(chat_id, text)

    async def on_tool(self, chat_id, name):
        await self.bot().on_tool(chat_id, name)

    async def confirm(self, question, seconds):
        return await self.bot().confirm(question, seconds)
