# Bot API arguments as the real server reads them: types, formatting, keyboards, flood control.
import json
import math
import re
import time

from host_sim.telegram_html import EntityParseError, parse_html, utf16_len
from host_sim.telegram_markdown import parse_markdown, parse_markdown_v2

MAX_TEXT_CHARS = 4096  # code points, after entity parsing
MAX_CALLBACK_DATA_BYTES = 64
JSON_FIELDS = ("allowed_updates", "reply_markup", "entities", "caption_entities",
               "reply_parameters", "link_preview_options")
PARSERS = {"html": parse_html, "markdownv2": parse_markdown_v2, "markdown": parse_markdown}
_LEADING_INTEGER = re.compile(r"\s*[-+]?\d+")  # "1.5" reads as 1, like the real server
CHAT_ACTIONS = ("typing", "upload_photo", "record_video", "upload_video", "record_voice",
                "upload_voice", "upload_document", "choose_sticker", "find_location",
                "record_video_note", "upload_video_note")


class ApiError(Exception):
    """A Bot API failure: HTTP status == error_code, `description`, optional retry_after."""

    def __init__(self, code, description, retry_after=None):
        super().__init__(description)
        self.code, self.description, self.retry_after = code, description, retry_after


def bad_request(detail):
    return ApiError(400, "Bad Request: " + detail)


def as_arg(value):
    """A JSON body value as the server sees it: every argument is a string."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def recorded(params):
    """The params for `calls`: JSON-typed fields decoded where the API expects JSON."""
    out = dict(params)
    for name in JSON_FIELDS:
        if isinstance(out.get(name), str):
            try:
                out[name] = json.loads(out[name])
            except ValueError:
                pass
    return out


class Args:
    """Typed access to one request's string arguments."""

    def __init__(self, args):
        self.args = args

    def has(self, name):
        return self.args.get(name, "") != ""

    def text(self, name, default=""):
        return self.args.get(name, default)

    def integer(self, name, default=0, low=None, high=None):
        """An integer argument clamped into [low, high] like the real server; junk -> default."""
        digits = _LEADING_INTEGER.match(self.args.get(name, ""))
        value = int(digits.group(0)) if digits else default
        if low is not None:
            value = max(low, value)
        return value if high is None else min(high, value)

    def boolean(self, name):
        return self.args.get(name, "").strip().lower() in ("true", "1")

    def json(self, name, error):
        raw = self.args.get(name, "")
        if raw == "":
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise bad_request(error) from None

    def chat_id(self):
        """The chat id (an integer); '@username' chats are not modelled, so they are not found."""
        raw = self.args.get("chat_id", "").strip()
        if not raw:
            raise bad_request("chat_id is empty")
        try:
            return int(raw)
        except ValueError:
            raise bad_request("chat not found") from None


def _trimmed(plain, entities):
    """Leading/trailing white space goes, as Telegram strips it; entities follow the text."""
    lead = len(plain) - len(plain.lstrip())
    text = plain.strip()
    shift, limit = utf16_len(plain[:lead]), utf16_len(text)
    kept = []
    for entity in entities:
        start = max(0, entity["offset"] - shift)
        end = min(limit, entity["offset"] + entity["length"] - shift)
        if end > start:
            kept.append(dict(entity, offset=start, length=end - start))
    return text, kept


def formatted(args, field="text", allow_empty=False):
    """(plain text, entities) of a text argument after parse_mode; raises the API's errors."""
    raw = args.text(field)
    mode = args.text("parse_mode").strip().lower()
    if mode and mode not in PARSERS:
        raise bad_request("unsupported parse_mode")
    try:
        plain, entities = PARSERS[mode](raw) if mode else (raw, [])
    except EntityParseError as exc:
        raise bad_request("can't parse entities: {}".format(exc)) from None
    if not mode and args.has("entities"):
        entities = args.json("entities", "can't parse entities JSON object") or []
    plain, entities = _trimmed(plain, entities)
    if not plain and not allow_empty:
        raise bad_request("message text is empty")
    if len(plain) > MAX_TEXT_CHARS:
        raise bad_request("message is too long")
    return plain, entities


def _button_error(detail):
    return bad_request("can't parse inline keyboard button: " + detail)


def _check_button(button):
    if not isinstance(button, dict):
        raise _button_error("InlineKeyboardButton must be an Object")
    if not isinstance(button.get("text"), str):
        raise _button_error('Field "text" must be of type String')
    if "callback_data" in button:
        data = button["callback_data"]
        if not isinstance(data, str):
            raise _button_error('Field "callback_data" must be of type String')
        if not 1 <= len(data.encode("utf-8")) <= MAX_CALLBACK_DATA_BYTES:
            raise bad_request("BUTTON_DATA_INVALID")
    elif not any(k in button for k in ("url", "web_app", "login_url", "switch_inline_query",
                                        "switch_inline_query_current_chat", "copy_text",
                                        "switch_inline_query_chosen_chat", "pay",
                                        "callback_game")):
        raise _button_error("Text buttons are unallowed in the inline keyboard")
    elif "url" in button and not button["url"]:
        raise bad_request("BUTTON_URL_INVALID")


def reply_markup(args):
    """The reply_markup argument, validated; None when absent."""
    markup = args.json("reply_markup", "can't parse reply keyboard markup JSON object")
    if markup is None:
        return None
    if not isinstance(markup, dict):
        raise bad_request("can't parse reply keyboard markup JSON object")
    if "inline_keyboard" in markup:
        rows = markup["inline_keyboard"]
        if not isinstance(rows, list):
            raise bad_request('field "inline_keyboard" of the InlineKeyboardMarkup must be an '
                              "Array")
        for row in rows:
            if not isinstance(row, list):
                raise bad_request('field "inline_keyboard" of the InlineKeyboardMarkup must be '
                                  "an Array of Arrays")
            for button in row:
                _check_button(button)
    return markup


class TokenBucket:
    """`per_second` sustained, bursts of `burst`; wait_needed() is None or seconds to wait."""

    def __init__(self, per_second, burst):
        self.per_second, self.burst = float(per_second), float(burst)
        self.tokens, self.stamp = float(burst), time.monotonic()

    def _refill(self, now):
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now

    def wait_needed(self, now):
        self._refill(now)
        if self.tokens >= 1.0:
            return None
        return (1.0 - self.tokens) / self.per_second

    def take(self):
        self.tokens -= 1.0


class FloodControl:
    """Per-chat, per-group and overall message limits; each is (per_second, burst) or None."""

    def __init__(self, per_chat=(1.0, 5), per_group=(20 / 60.0, 20), overall=(30.0, 30)):
        self.set(per_chat, per_group, overall)

    def set(self, per_chat, per_group, overall):
        self.per_chat, self.per_group, self.overall = per_chat, per_group, overall
        self._chats, self._groups = {}, {}
        self._overall = TokenBucket(*overall) if overall else None

    def check(self, chat_id):
        """Count one message to chat_id, or raise the 429 the real server gives."""
        now = time.monotonic()
        buckets = [self._overall] if self._overall else []
        limit, table = (self.per_chat, self._chats) if chat_id > 0 else (
            self.per_group, self._groups)
        if limit:
            if chat_id not in table:
                table[chat_id] = TokenBucket(*limit)
            buckets.append(table[chat_id])
        waits = [w for w in (b.wait_needed(now) for b in buckets) if w is not None]
        if waits:
            retry_after = max(1, int(math.ceil(max(waits))))
            raise ApiError(429, "Too Many Requests: retry after {}".format(retry_after),
                           retry_after)
        for bucket in buckets:
            bucket.take()
