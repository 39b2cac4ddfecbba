# The `telegram` channel: who may talk (allowlist and roles), always; the bot itself (telegram/live.py: Bot API,
# polling, replies, buttons) only once there is a bot token, a waiting reply or a message to send.
import asyncio

from mimi.safety import roles
from mimi.storage import files
from mimi.telegram import OUTBOX_FILE

# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\ntg_allow\ttg_allow <user_id> [role]\t1\t2"
    "\tlet a Telegram user talk to the bot (role: owner, operator (default) or observer)\tapp.telegram.cmd_allow"
    "\ntg_role\ttg_role <user_id> <role>\t2\t2"
    "\tchange an allowed user's role: owner, operator or observer\tapp.telegram.cmd_role"
    "\ntg_deny\ttg_deny <user_id>\t1\t1\tremove a Telegram user\tapp.telegram.cmd_deny"
    "\ntg_allowlist\ttg_allowlist\t0\t0\twho may talk to the bot, with roles\tapp.telegram.cmd_allowlist"
    "\n"
)


def parse_allowlist(text):
    ids = []
    for part in (text or "").split(","):
        part = part.strip()
        if part.isdigit():
            ids.append(int(part))
    return ids


def _replies_wait(data_root):
    """True when outbox.py's file holds replies from before the reboot (once emptied it holds "[]")."""
    return files.size(files.join(data_root, OUTBOX_FILE)) > len("[]")


class Telegram:
    def __init__(self, app):
        self.app = app
        self._live = None  # telegram/live.py's Live, made at its first need (a board without a bot has none)
        self._made = asyncio.Event()
        app.channels["telegram"] = self
        app.services.append(self)
        app.config.subscribe(self._on_config)
        app.console.commands.add_lines(_COMMANDS)
        if app.config.is_set("tg_config", "bot_token") or _replies_wait(app.flash.root):
            self.live()  # a bot to run, or replies from before the reboot still to deliver

    def live(self):
        """The bot at work (telegram/live.py), made once: its service starts now if this one already runs."""
        if self._live is None:
            from mimi.telegram.live import Live

            self._live = Live(self)
            self._made.set()
        return self._live

    def _on_config(self, ns, key):
        if ns != "tg_config":
            return
        if self._live is not None:
            self._live.on_config(key)
        elif key == "bot_token" and self.app.config.is_set(ns, key):
            self.live()  # the token arrived: the poller starts with it

    async def run(self):
        greet = self._live is not None  # getMe only for a bot already set up when the service starts
        await self._made.wait()
        await self._live.run(greet)

    # -- the allowlist and roles --
    def allowed(self):
        return parse_allowlist(self.app.config.get("tg_config", "allowlist"))

    def _save_allowlist(self, ids):
        self.app.config.set("tg_config", "allowlist", ",".join(str(i) for i in ids))

    async def cmd_allow(self, user_id, role=None):
        if not user_id.isdigit():
            print("error: a Telegram user id is a number, e.g. tg_allow 123456789")
            return
        if role is not None and role not in roles.ROLES:
            print("error: role must be one of {}".format(", ".join(roles.ROLES)))
            return
        ids = self.allowed()
        if int(user_id) not in ids:
            ids.append(int(user_id))
            self._save_allowlist(ids)
        if role is not None:
            roles.set_role(self.app.config, int(user_id), role)
        print("Telegram user {} may now chat as {} ({} allowed)".format(
            user_id, roles.of_user(self.app.config, int(user_id)), len(ids)))

    async def cmd_role(self, user_id, role):
        if not user_id.isdigit() or int(user_id) not in self.allowed():
            print("error: {} is not on the allowlist; add them with tg_allow {} {}".format(user_id, user_id, role))
            return
        roles.set_role(self.app.config, int(user_id), role)
        print("Telegram user {} is now {}".format(user_id, role))

    async def cmd_deny(self, user_id):
        ids = self.allowed()
        if user_id.isdigit() and int(user_id) in ids:
            ids.remove(int(user_id))
            self._save_allowlist(ids)
            roles.forget(self.app.config, int(user_id))
            print("Telegram user {} removed ({} allowed)".format(user_id, len(ids)))
        else:
            print("Telegram user {} was not on the allowlist".format(user_id))

    async def cmd_allowlist(self):
        ids = self.allowed()
        shown = ", ".join("{} ({})".format(i, roles.of_user(self.app.config, i)) for i in ids)
        print("allowed Telegram users: {}".format(shown if ids else "nobody yet (tg_allow <id> [role])"))

    # -- the channel, called by the agent, the dispatcher and the safety policy (a reply makes the bot) --
    async def on_start(self, chat_id):
        await self.live().on_start(chat_id)

    async def on_delta(self, chat_id, text):
        await self.live().on_delta(chat_id, text)

    async def on_tool(self, chat_id, name):
        await self.live().on_tool(chat_id, name)

    async def send(self, message):
        await self.live().send(message)

    async def confirm(self, question, seconds):
        return await self.live().confirm(question, seconds)
