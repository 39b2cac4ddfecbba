# An in-memory Telegram for one bot: chats, messages, the update queue, the Bot API methods.
import re
import time

from host_sim.telegram_media import CAPTIONED, MEDIA, Uploads
from host_sim.telegram_params import (
    CHAT_ACTIONS, ApiError, bad_request, formatted, reply_markup)

FIRST_UPDATE_ID = 1001
LONG_POLL_MAX_SECONDS = 50  # the real server clamps getUpdates' timeout to this
MAX_UPDATES_PER_CALL = 100
UPDATE_TTL_SECONDS = 24 * 3600  # updates wait at most 24 h on the server
UPDATE_TYPES = (
    "message", "edited_message", "channel_post", "edited_channel_post", "business_connection",
    "business_message", "edited_business_message", "deleted_business_messages",
    "message_reaction", "message_reaction_count", "inline_query", "chosen_inline_result",
    "callback_query", "shipping_query", "pre_checkout_query", "purchased_paid_media", "poll",
    "poll_answer", "my_chat_member", "chat_member", "chat_join_request", "chat_boost",
    "removed_chat_boost")
# What an empty or never-given allowed_updates means: everything but these.
NOT_BY_DEFAULT = ("chat_member", "message_reaction", "message_reaction_count")
DRAFT_MODES = ("ok", "not_found", "bad_request")
def _chat_object(chat_id, title=None, user=None):
    if chat_id > 0:
        chat = {"id": chat_id, "type": "private", "first_name": (user or {}).get(
            "first_name", "A")}
        if (user or {}).get("username"):
            chat["username"] = user["username"]
        return chat
    kind = "supergroup" if str(chat_id).startswith("-100") else "group"
    return {"id": chat_id, "type": kind, "title": title or "Group {}".format(-chat_id)}


class World(Uploads):
    """Telegram as seen by one bot. Not thread-safe: FakeTelegram calls it under its lock."""

    def __init__(self, token, drafts="ok", update_ttl=UPDATE_TTL_SECONDS, flood=None):
        if drafts not in DRAFT_MODES:
            raise ValueError("drafts must be one of {}".format(DRAFT_MODES))
        self.bot = {"id": int(token.split(":")[0]) if token[:1].isdigit() else 1,
                    "is_bot": True, "first_name": "Mimi", "username": "mimi_test_bot"}
        self.drafts_mode, self.update_ttl = drafts, update_ttl
        self.flood = flood  # a FloodControl, or None for no limits
        self.chats = {}
        self.queue = []  # [(monotonic time queued, update)], oldest first
        self.replay = []  # updates to deliver once more (duplicate_next_update)
        self.next_update_id = FIRST_UPDATE_ID
        self.allowed = None  # the remembered allowed_updates (None: never given)
        self.offset_confirmed = 0
        self.webhook = ""
        self.queries = {}  # callback_query id -> answered?
        self.callback_answers = []
        self.duplicate_next = False
        self._files = 0

    # ---- the users' side (test helpers call these) ----

    def add_chat(self, chat_id, title=None, user=None):
        if chat_id not in self.chats:
            self.chats[chat_id] = {"chat": _chat_object(chat_id, title, user), "messages": {},
                                   "next_message_id": 1, "drafts": [], "actions": []}
        return self.chats[chat_id]

    def allows(self, kind):
        if not self.allowed:
            return kind not in NOT_BY_DEFAULT
        return kind in self.allowed

    def add_update(self, kind, body):
        """Queue an update; None when the bot's allowed_updates means it is never produced."""
        if not self.allows(kind):
            return None
        update_id = self.next_update_id
        self.next_update_id += 1
        self.queue.append((time.monotonic(), {"update_id": update_id, kind: body}))
        return update_id

    def _incoming(self, user_id, chat_id, username, first_name, title=None):
        user = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username:
            user["username"] = username
        chat = self.add_chat(user_id if chat_id is None else chat_id, title, user)
        message_id = chat["next_message_id"]
        chat["next_message_id"] += 1
        message = {"message_id": message_id, "from": user, "chat": dict(chat["chat"]),
                   "date": int(time.time())}
        chat["messages"][message_id] = {"message": message, "from_bot": False}
        return message

    def user_message(self, user_id, text, chat_id=None, username=None, first_name="A", reply_to=None):
        replied = None
        if reply_to is not None:
            stored = self.add_chat(user_id if chat_id is None else chat_id)["messages"].get(reply_to)
            if stored is None:
                raise ValueError("no message {} in that chat to reply to".format(reply_to))
            replied = dict(stored["message"])
            replied.pop("reply_to_message", None)  # the API nests one level only
        message = self._incoming(user_id, chat_id, username, first_name)
        message["text"] = text
        entities = found_entities(text)
        if entities:
            message["entities"] = entities
        if replied is not None:
            message["reply_to_message"] = replied
        return self.add_update("message", message)

    def non_text_message(self, user_id, kind="photo", caption=None, chat_id=None,
                         username=None, first_name="A"):
        if kind not in MEDIA:
            raise ValueError("kind must be one of {}".format(sorted(MEDIA)))
        message = self._incoming(user_id, chat_id, username, first_name)
        self._files += 2
        message[kind] = MEDIA[kind](self._files)
        if caption is not None and kind in CAPTIONED:
            message["caption"] = caption
        return self.add_update("message", message)

    def callback_query(self, user_id, data, message_id, chat_id=None, first_name="A"):
        chat = self.add_chat(user_id if chat_id is None else chat_id)
        stored = chat["messages"].get(message_id)
        message = dict(stored["message"]) if stored else {
            "message_id": message_id, "chat": dict(chat["chat"]), "date": int(time.time())}
        query_id = "{:x}{:06x}".format(user_id & 0xFFFFFFFF, self.next_update_id)
        body = {"id": query_id, "from": {"id": user_id, "is_bot": False,
                                         "first_name": first_name},
                "message": message, "chat_instance": str(-abs(chat["chat"]["id"])),
                "data": data}
        update_id = self.add_update("callback_query", body)
        if update_id is not None:
            self.queries[query_id] = False
        return update_id

    # ---- getUpdates, in two steps so the server can hold the second one ----

    def begin_poll(self, args):
        """Check and apply a getUpdates call's arguments; returns (limit, timeout seconds)."""
        if self.webhook:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active;"
                                " use deleteWebhook to delete the webhook first")
        allowed = args.json("allowed_updates", "can't parse allowed_updates JSON object")
        if allowed is not None:
            if not isinstance(allowed, list):
                raise bad_request("allowed_updates must be an Array")
            self.allowed = [k for k in allowed if k in UPDATE_TYPES]
        if args.has("offset"):
            self._confirm(args.integer("offset"))
        limit = args.integer("limit", MAX_UPDATES_PER_CALL, 1, MAX_UPDATES_PER_CALL)
        return limit, args.integer("timeout", 0, 0, LONG_POLL_MAX_SECONDS)

    def _confirm(self, offset):
        if offset < 0:
            keep = self.queue[offset:]
        else:
            keep = [item for item in self.queue if item[1]["update_id"] >= offset]
        kept = {u["update_id"] for _, u in keep}
        for _, update in self.queue:
            if update["update_id"] not in kept:
                self.offset_confirmed = max(self.offset_confirmed, update["update_id"])
        self.queue = keep

    def take_updates(self, limit):
        """The updates to answer with now (possibly none); they stay queued until confirmed."""
        oldest = time.monotonic() - self.update_ttl
        self.queue = [item for item in self.queue if item[0] >= oldest]
        result = (self.replay + [u for _, u in self.queue])[:limit]
        self.replay = []
        if result and self.duplicate_next:
            self.duplicate_next = False
            self.replay = [result[0]]
        return result

    # ---- the bot's side: Bot API methods, each -> (result, description or None) ----

    def chat(self, args):
        chat_id = args.chat_id()
        if chat_id not in self.chats:
            raise bad_request("chat not found")
        return self.chats[chat_id]

    def get_me(self, args):
        return dict(self.bot, can_join_groups=True, can_read_all_group_messages=False,
                    supports_inline_queries=False), None

    def send_message(self, args):
        chat = self.chat(args)
        text, entities = formatted(args)
        markup = reply_markup(args)
        if self.flood:
            self.flood.check(chat["chat"]["id"])
        message_id = chat["next_message_id"]
        chat["next_message_id"] += 1
        replied = self._replied(chat, args)
        message = {"message_id": message_id, "from": dict(self.bot),
                   "chat": dict(chat["chat"]), "date": int(time.time()), "text": text}
        _set_content(message, text, entities, markup)
        if replied is not None:
            message["reply_to_message"] = replied
        chat["messages"][message_id] = {"message": message, "from_bot": True,
                                        "raw": args.text("text"),
                                        "parse_mode": args.text("parse_mode") or None}
        return dict(message), None

    def edit_message_text(self, args):
        chat = self.chat(args)
        if not args.has("message_id"):
            raise bad_request("message identifier is not specified")
        stored = chat["messages"].get(args.integer("message_id"))
        if stored is None:
            raise bad_request("message to edit not found")
        if not stored["from_bot"]:
            raise bad_request("message can't be edited")
        text, entities = formatted(args)
        markup = reply_markup(args)
        message = stored["message"]
        if (text, entities, markup) == (message["text"], message.get("entities", []),
                                        message.get("reply_markup")):
            raise bad_request("message is not modified: specified new message content and "
                              "reply markup are exactly the same as a current content and "
                              "reply markup of the message")
        if self.flood:
            self.flood.check(chat["chat"]["id"])
        _set_content(message, text, entities, markup)
        message["edit_date"] = int(time.time())
        stored.update(raw=args.text("text"), parse_mode=args.text("parse_mode") or None)
        return dict(message), None

    def send_message_draft(self, args):
        if self.drafts_mode == "not_found":
            raise ApiError(404, "Not Found: method not found")
        if self.drafts_mode == "bad_request":
            raise bad_request("method is not available")
        chat = self.chat(args)
        if chat["chat"]["type"] != "private":
            raise bad_request("TEXTDRAFT_PEER_INVALID")
        draft_id = args.integer("draft_id")
        if draft_id == 0:
            raise bad_request("draft_id must be non-zero")
        text, _ = formatted(args, allow_empty=True)
        chat["drafts"].append({"draft_id": draft_id, "text": args.text("text"), "shown": text,
                               "parse_mode": args.text("parse_mode") or None,
                               "time": time.time()})
        return True, None

    def send_chat_action(self, args):
        chat = self.chat(args)
        action = args.text("action")
        if action not in CHAT_ACTIONS:
            raise bad_request("wrong parameter action in request")
        chat["actions"].append(action)
        return True, None

    def answer_callback_query(self, args):
        query_id = args.text("callback_query_id")
        if self.queries.get(query_id, True):
            raise bad_request("query is too old and response timeout expired or query ID is "
                              "invalid")
        self.queries[query_id] = True
        self.callback_answers.append({"callback_query_id": query_id,
                                      "text": args.text("text") or None,
                                      "show_alert": args.boolean("show_alert")})
        return True, None

    def set_webhook(self, args):
        url = args.text("url")
        if not url:
            return self.delete_webhook(args)
        self.webhook = url
        if args.boolean("drop_pending_updates"):
            self.queue = []
        return True, "Webhook was set"

    def delete_webhook(self, args):
        had, self.webhook = self.webhook, ""
        if args.boolean("drop_pending_updates"):
            self.queue = []
        return True, "Webhook was deleted" if had else "Webhook is already deleted"

    def get_webhook_info(self, args):
        return {"url": self.webhook, "has_custom_certificate": False,
                "pending_update_count": len(self.queue)}, None


_MENTION = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z][A-Za-z0-9_]{3,31}(?![A-Za-z0-9_])")
_COMMAND = re.compile(r"^/[A-Za-z0-9_]{1,32}(@[A-Za-z][A-Za-z0-9_]{3,31})?")


def _utf16_len(text):
    return len(text.encode("utf-16-le")) // 2


def found_entities(text):
    """The entities Telegram finds by itself in plain text: a leading /command, @mentions.
    Offsets and lengths count UTF-16 code units, as in the Bot API."""
    found = []
    command = _COMMAND.match(text)
    if command:
        found.append({"offset": 0, "length": _utf16_len(command.group(0)), "type": "bot_command"})
    for match in _MENTION.finditer(text):
        if command and match.start() < command.end():
            continue
        found.append({"offset": _utf16_len(text[:match.start()]), "length": _utf16_len(match.group(0)),
                      "type": "mention"})
    return found


def _set_content(message, text, entities, markup):
    message["text"] = text
    for key, value in (("entities", entities), ("reply_markup", markup)):
        if value:
            message[key] = value
        else:
            message.pop(key, None)


METHODS = {
    "getMe": World.get_me, "sendMessage": World.send_message,
    "editMessageText": World.edit_message_text, "sendMessageDraft": World.send_message_draft,
    "sendChatAction": World.send_chat_action, "answerCallbackQuery": World.answer_callback_query,
    "setWebhook": World.set_webhook, "deleteWebhook": World.delete_webhook,
    "getWebhookInfo": World.get_webhook_info, "sendVoice": World.send_voice,
}
# Method names are case-insensitive on the real server.
CANONICAL = {name.lower(): name for name in list(METHODS) + ["getUpdates"]}
