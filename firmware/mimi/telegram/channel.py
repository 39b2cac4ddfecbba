# The `telegram` channel: who may talk (the allowlist), bot commands, and routing replies back.
from mimi.bus.message import Message
from mimi.platform import const
from mimi.telegram.api import BotAPI
from mimi.telegram.poller import Poller
from mimi.telegram.sender import Sender

STRANGERS_REMEMBERED = const(32)  # each stranger is told how to get in once per boot
_HELP = (
    "I'm Mimi, a pocket assistant living on an ESP32-S3. Just write to me.\n"
    "/new starts a fresh conversation, /help shows this message."
)
_NON_TEXT = "I can only read text messages for now; please type your question."


def parse_allowlist(text):
    ids = []
    for part in (text or "").split(","):
        part = part.strip()
        if part.isdigit():
            ids.append(int(part))
    return ids


class Telegram:
    def __init__(self, app):
        self.app = app
        self.api = BotAPI(app.config)
        self.sender = Sender(self.api)
        self.poller = Poller(self.api, self._on_update)
        self._strangers = []
        app.channels["telegram"] = self
        app.services.append(self)
        app.config.subscribe(self._on_config)
        add = app.console.commands.add
        add("tg_allow", self.cmd_allow, "tg_allow <user_id>", 1, 1, "let a Telegram user talk to the bot")
        add("tg_deny", self.cmd_deny, "tg_deny <user_id>", 1, 1, "remove a Telegram user")
        add("tg_allowlist", self.cmd_allowlist, "tg_allowlist", 0, 0, "who may talk to the bot")

    def _on_config(self, ns, key):
        if ns == "tg_config":
            self.poller.wake()

    async def run(self):
        await self.poller.run()

    # -- the allowlist --
    def allowed(self):
        return parse_allowlist(self.app.config.get("tg_config", "allowlist"))

    def _save_allowlist(self, ids):
        self.app.config.set("tg_config", "allowlist", ",".join(str(i) for i in ids))

    async def cmd_allow(self, user_id):
        if not user_id.isdigit():
            print("error: a Telegram user id is a number, e.g. tg_allow 123456789")
            return
        ids = self.allowed()
        if int(user_id) not in ids:
            ids.append(int(user_id))
            self._save_allowlist(ids)
        print("Telegram user {} may now chat ({} allowed)".format(user_id, len(ids)))

    async def cmd_deny(self, user_id):
        ids = self.allowed()
        if user_id.isdigit() and int(user_id) in ids:
            ids.remove(int(user_id))
            self._save_allowlist(ids)
            print("Telegram user {} removed ({} allowed)".format(user_id, len(ids)))
        else:
            print("Telegram user {} was not on the allowlist".format(user_id))

    async def cmd_allowlist(self):
        ids = self.allowed()
        print("allowed Telegram users: {}".format(", ".join(str(i) for i in ids) if ids else "nobody yet (tg_allow <id>)"))

    # -- incoming updates --
    async def _on_update(self, update):
        """Route one update; True when it is fully answered here, False when the agent will answer."""
        message = update.get("message")
        if not isinstance(message, dict):
            return True
        sender = message.get("from") or {}
        chat = message.get("chat") or {}
        user_id, chat_id = sender.get("id"), chat.get("id")
        if not isinstance(user_id, int) or chat_id is None:
            return True
        if user_id not in self.allowed():
            await self._stranger(user_id, sender.get("username"), chat_id)
            return True
        text = message.get("text")
        if not isinstance(text, str):
            await self._answer(chat_id, _NON_TEXT)
            return True
        if text.startswith("/"):
            command = text.split()[0].split("@")[0].lower() if text.split() else ""
            if command in ("/start", "/help"):
                name = sender.get("first_name") or ""
                await self._answer(chat_id, ("Hi {}! ".format(name) if name else "Hi! ") + _HELP)
                return True
            if command == "/new":
                removed = self.app.sessions.clear("telegram_{}".format(chat_id))
                await self._answer(chat_id, "Started a fresh conversation." if removed else "This conversation is already fresh.")
                return True
        meta = {"update_id": update["update_id"], "user_id": user_id}
        await self.app.bus.inbound.put(Message("telegram", chat_id, text, meta))
        return False

    async def _stranger(self, user_id, username, chat_id):
        if user_id in self._strangers:
            return
        self._strangers.append(user_id)
        if len(self._strangers) > STRANGERS_REMEMBERED:
            self._strangers.pop(0)
        print("Telegram user {} (@{}) wants to chat: tg_allow {}".format(user_id, username or "?", user_id))
        await self._answer(
            chat_id,
            "Sorry, I only talk to people my owner has admitted. Your Telegram user id is {}: "
            "ask the owner to run tg_allow {} on my console.".format(user_id, user_id),
        )

    async def _answer(self, chat_id, text):
        try:
            await self.sender.send_plain(chat_id, text)
        except Exception as exc:
            print("Telegram: could not answer chat {}: {}".format(chat_id, exc))

    # -- the channel, called by the agent and the dispatcher --
    async def on_start(self, chat_id):
        await self.sender.start(chat_id)

    async def on_delta(self, chat_id, text):
        await self.sender.delta(chat_id, text)

    async def on_tool(self, chat_id, name):
        await self.sender.tool(chat_id, name)

    async def send(self, message):
        meta = message.meta or {}
        request = meta.get("request") or {}
        try:
            await self.sender.reply(message.chat_id, message.content, meta.get("kind") == "error")
        finally:
            if "update_id" in request:
                self.poller.answered(request["update_id"])
