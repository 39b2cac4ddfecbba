# The Telegram bot at work, made at its first need (channel.py): polling, routing updates, buttons, replies.
import asyncio

from mimi.bus.message import TELEGRAM, Message
from mimi.health import memory_errors
from mimi.platform import const, log
from mimi.safety import roles
from mimi.telegram import HELP, NEW, START
from mimi.telegram.allowlist import allowed
from mimi.telegram.api import BotAPI
from mimi.telegram.outbox import Outbox, Undelivered
from mimi.telegram.poller import Poller
from mimi.telegram.sender import Sender

_STRANGERS_REMEMBERED = const(32)  # each stranger is told how to get in once per boot
_HELP = (
    "I'm Mimi, a pocket assistant living on an ESP32-S3. Just write to me.\n"
    "/new starts a fresh conversation, /help shows this message."
)
_NON_TEXT = ("I can read text, photos, PDFs and text files and listen to voice notes, but not this kind of message; "
             "please type your question.")
_MEDIA = ("photo", "document", "voice", "audio")
_GROUP_TYPES = ("group", "supergroup")
_BUTTON_PREFIX = "cf:"  # callback_data "cf:<question id>:y" or ":n"
_STALE = "This question is no longer open (already answered or expired)."
_NOT_YOURS = "Only the person who asked, or an owner, can answer this."


def addressed(message, bot):
    """In a group: (True, text without the bot's @mention) when the message mentions the bot or replies to
    one of its messages, else (False, text). Private chats are always addressed. `bot` is getMe's result."""
    text = message.get("text") or ""
    if (message.get("chat") or {}).get("type") not in _GROUP_TYPES:
        return True, text
    if not bot:
        return False, text
    replied = message.get("reply_to_message") or {}
    to_bot = (replied.get("from") or {}).get("id") == bot.get("id")
    mention = "@" + (bot.get("username") or "").lower()
    # Entity offsets count UTF-16 units, not characters: look for the name in the text instead.
    kinds = [entity.get("type") for entity in message.get("entities") or () if isinstance(entity, dict)]
    found = ("mention" in kinds or "bot_command" in kinds) and _mentions(text.lower(), mention)
    if found:
        text = _without(text, mention)
    return found or to_bot, text


def _mentions(low, mention):
    """True when low holds mention as a whole name (not the start of a longer one)."""
    at = low.find(mention)
    while at >= 0:
        end = at + len(mention)
        if end == len(low) or not (low[end].isalpha() or low[end].isdigit() or low[end] == "_"):
            return True
        at = low.find(mention, end)
    return False


def _without(text, mention):
    """text with every @mention of the bot removed (any letter case), spaces tidied."""
    low, at = text.lower(), 0
    parts = []
    while True:
        found = low.find(mention, at)
        if found < 0:
            parts.append(text[at:])
            break
        parts.append(text[at:found])
        at = found + len(mention)
    return " ".join("".join(parts).split())


class Bot:
    """The Bot API, the poller, the sender and the outbox of one `telegram` channel (channel.py)."""

    def __init__(self, channel):
        app = channel.app
        self.app = app
        self.api = BotAPI(app.config)
        self.sender = Sender(self.api)
        self.outbox = Outbox(app.flash.root, self.sender)
        self.poller = Poller(self.api, self._on_update, self._asking, lambda: not app.bus.inbound.full())
        self.bot = None  # getMe's answer: the bot's id and @username (for group mentions)
        self._strangers = []

    def on_config(self, key):
        """A tg_config setting changed."""
        if key in ("bot_token", "api_base"):
            self.bot = None  # another bot, or another server: ask getMe again
        self.poller.wake()

    async def run(self, greet):
        """greet: ask getMe first (the service started with the token already set)."""
        # kept: a task nobody holds may vanish; a MemoryError ends neither loop (health/memory_errors.py)
        self.outbox_task = asyncio.create_task(memory_errors.lasting("Telegram outbox", self.outbox.run))
        if greet:
            await self._whoami()
        await memory_errors.lasting("Telegram poller", self.poller.run)

    async def _whoami(self):
        """The bot's own id and @username, asked once (again after a failure, when a group needs it)."""
        if self.bot is None and self.api.has_token():
            try:
                me = await self.api.call("getMe")
                if isinstance(me, dict) and me.get("username"):
                    self.bot = me
                    log("Telegram: I am @{}".format(me["username"]))
            except Exception as exc:  # the poller reports network trouble; groups wait until this works
                log("Telegram: getMe failed: {}".format(exc))
        return self.bot

    # -- incoming updates --
    async def _on_update(self, update):
        """Route one update; True when it is fully answered here, False when the agent will answer."""
        query = update.get("callback_query")
        if isinstance(query, dict):
            await self._on_button(query)
            return True
        message = update.get("message")
        if not isinstance(message, dict):
            return True
        sender = message.get("from") or {}
        chat = message.get("chat") or {}
        user_id, chat_id = sender.get("id"), chat.get("id")
        if not isinstance(user_id, int) or chat_id is None:
            return True
        if chat.get("type") in _GROUP_TYPES:
            await self._whoami()
        is_for_me, text = addressed(_with_caption(message), self.bot)
        if not is_for_me:
            return True  # group talk not meant for the bot: no reply, no LLM call
        if user_id not in allowed(self.app.config):
            await self._stranger(user_id, sender.get("username"), chat_id)
            return True
        if not isinstance(message.get("text"), str):
            if [kind for kind in _MEDIA if kind in message]:
                return await self._media(update, message, text, user_id, chat_id)
            await self._answer(chat_id, _NON_TEXT)
            return True
        if text.startswith("/"):
            command = text.split()[0].split("@")[0].lower() if text.split() else ""
            if command[1:] in (START, HELP):
                name = sender.get("first_name") or ""
                rules = self.app.rules()  # the owner's own /commands, when rules have some
                extra = "\n" + "\n".join(rules.help_lines()) if rules is not None and rules.words else ""
                await self._answer(chat_id, ("Hi {}! ".format(name) if name else "Hi! ") + _HELP + extra)
                return True
            if command[1:] == NEW:
                removed = self.app.sessions.clear("telegram_{}".format(chat_id))
                await self._answer(chat_id, "Started a fresh conversation." if removed
                                   else "This conversation is already fresh.")
                return True
        if not text.strip():
            await self._answer(chat_id, "Yes? Write your question after my name.")
            return True
        meta = {"update_id": update["update_id"], "user_id": user_id, "role": roles.of_user(self.app.config, user_id)}
        await self.app.deliver(Message(TELEGRAM, chat_id, text, meta))
        return False

    async def _media(self, update, message, text, user_id, chat_id):
        """A photo or file: downloaded to flash, then a turn for the agent (False), or answered here (True)."""
        from mimi.agent import attachments
        from mimi.telegram import media

        try:  # the download may take a few seconds: show that something happens
            await self.api.call("sendChatAction", {"chat_id": chat_id, "action": "typing"})
        except Exception:  # a missing chat action costs nothing
            pass
        try:
            item = await media.receive(self.api, self.app.flash.root, message, update["update_id"])
        except attachments.Refused as exc:
            await self._answer(chat_id, str(exc))
            return True
        item["caption"] = text
        meta = {"update_id": update["update_id"], "user_id": user_id, "role": roles.of_user(self.app.config, user_id),
                "media": item}
        await self.app.bus.inbound.put(Message(TELEGRAM, chat_id, attachments.question(text, item), meta))
        return False

    async def _stranger(self, user_id, username, chat_id):
        if user_id in self._strangers:
            return
        self._strangers.append(user_id)
        if len(self._strangers) > _STRANGERS_REMEMBERED:
            self._strangers.pop(0)
        log("Telegram user {} (@{}) wants to chat: tg_allow {}".format(user_id, username or "?", user_id))
        await self._answer(
            chat_id,
            "Sorry, I only talk to people my owner has admitted. Your Telegram user id is {}: "
            "ask the owner to run tg_allow {} on my console.".format(user_id, user_id),
        )

    async def _answer(self, chat_id, text):
        try:
            await self.sender.send_plain(chat_id, text)
        except Exception as exc:
            log("Telegram: could not answer chat {}: {}".format(chat_id, exc))

    # -- confirmation questions (safety/policy.py asks, a button answers) --
    def _questions(self):
        """The policy's open questions, or None (no policy, or no question asked since boot)."""
        return getattr(getattr(self.app, "policy", None), "questions", None)

    def _asking(self):
        questions = self._questions()
        return questions is not None and questions.waiting_on(TELEGRAM)

    async def confirm(self, question, seconds):
        """Ask with Approve / Deny buttons; the outcome, shown afterwards in place of the buttons."""
        from mimi.safety import confirm  # loaded with the first question (safety/policy_confirm.py)

        buttons = [[{"text": "Approve", "callback_data": "{}{}:y".format(_BUTTON_PREFIX, question.id)},
                    {"text": "Deny", "callback_data": "{}{}:n".format(_BUTTON_PREFIX, question.id)}]]
        sent = await self.api.call("sendMessage", {"chat_id": _chat(question.chat_id), "text": question.text(),
                                                   "reply_markup": {"inline_keyboard": buttons}})
        self.poller.question_opened()
        outcome = await question.wait(seconds)
        if isinstance(sent, dict) and "message_id" in sent:
            try:  # no reply_markup: the buttons go away
                await self.api.call("editMessageText", {
                    "chat_id": _chat(question.chat_id), "message_id": sent["message_id"],
                    "text": "{}\n\n{}".format(question.text(), confirm.OUTCOME_SHOWN[outcome])})
            except Exception as exc:
                log("Telegram: could not show the answer to a question: {}".format(exc))
        return outcome

    async def _on_button(self, query):
        data = query.get("data") or ""
        qid, _, answer = data[len(_BUTTON_PREFIX):].partition(":") if data.startswith(_BUTTON_PREFIX) else ("", "", "")
        chat_id = ((query.get("message") or {}).get("chat") or {}).get("id")
        user_id = (query.get("from") or {}).get("id")
        from mimi.safety import confirm

        outcome = confirm.answer(self.app, TELEGRAM, chat_id, qid, answer == "y",
                                 lambda question: self._may_answer(question, user_id))
        if outcome == confirm.SETTLED:
            reply = "Approved" if answer == "y" else "Denied"
        else:
            reply = _STALE if outcome == confirm.STALE else _NOT_YOURS
        try:
            await self.api.call("answerCallbackQuery", {"callback_query_id": query.get("id"), "text": reply})
        except Exception as exc:
            log("Telegram: could not answer a button press: {}".format(exc))

    def _may_answer(self, question, user_id):
        if user_id not in allowed(self.app.config):
            return False
        role = roles.of_user(self.app.config, user_id)
        if question.asker is not None:
            return user_id == question.asker or role == roles.OWNER
        return roles.allows(role, question.needed or roles.OWNER)

    # -- the channel, called by the agent and the dispatcher --
    async def on_start(self, chat_id):
        await self.sender.start(chat_id)

    async def on_delta(self, chat_id, text):
        await self.sender.delta(chat_id, text)

    async def on_tool(self, chat_id, name):
        await self.sender.tool(chat_id, name)

    async def send(self, message):
        meta = message.meta
        request = meta.get("request") or {}
        is_error = meta.get("kind") == "error"
        beside = meta.get("kind") in ("report", "notice")  # sent beside a reply being streamed, not ending it
        try:
            if self.outbox.holds(message.chat_id):  # an older reply still waits: this one goes after it
                if not beside:
                    await self.sender.stop(message.chat_id)
                text = message.text  # a long reply is split from its pieces, never joined whole
                self.outbox.add(message.chat_id, Sender.plain_parts(text) if beside else Sender.parts(text, is_error))
            elif beside:
                await self.sender.send_plain(message.chat_id, message.text, meta.get("reply_to"))
            elif not is_error and _spoken(self.app.config, meta, request):
                from mimi.telegram import voice_reply  # loaded with the first spoken reply

                await voice_reply.send(self, message.chat_id, message.text, request)
            else:
                await self.sender.reply(message.chat_id, message.text, is_error)
        except Undelivered as exc:  # kept on flash and sent when Telegram answers: late, not lost
            self.outbox.add(message.chat_id, exc.parts, exc.cause)
        finally:
            if "update_id" in request:
                self.poller.answered(request["update_id"])


def _spoken(config, meta, request):
    """Is this reply also a voice note (voice_config.reply: on, or auto for an answer to a voice note)?"""
    if meta.get("kind") != "reply":
        return False
    mode = config.get("voice_config", "reply")
    return mode == "on" or (mode == "auto" and request.get("voice") is True)


def _with_caption(message):
    """A photo's or file's caption read like a text message's text (mentions in groups)."""
    if isinstance(message.get("text"), str) or "caption" not in message:
        return message
    probe = dict(message)
    probe["text"] = message.get("caption") or ""
    probe["entities"] = message.get("caption_entities") or []
    return probe


def _chat(chat_id):
    text = str(chat_id)
    return int(text) if text.lstrip("-").isdigit() else text
