# Discord's wire for the fake (fake_discord.py): snowflakes, objects as the API shapes them, errors, rate limits.
import datetime
import hashlib
import json
import mimetypes
import secrets
import struct
import threading
import time
import zlib
from urllib.parse import parse_qsl, quote

from aiohttp import web

API = "/api/v10"
DISCORD_EPOCH_MS = 1420070400000
CONTENT_MAX = 2000  # characters (code points) in a message's content

# gateway intents (identify's "intents" bit field)
GUILDS = 1 << 0
GUILD_MEMBERS = 1 << 1  # privileged
GUILD_PRESENCES = 1 << 8  # privileged
GUILD_MESSAGES = 1 << 9
DIRECT_MESSAGES = 1 << 12
MESSAGE_CONTENT = 1 << 15  # privileged
ALL_INTENTS = (1 << 26) - 1  # GUILDS .. DIRECT_MESSAGE_POLLS (1 << 25)

APP_GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19  # application flag: the portal's MESSAGE_CONTENT toggle is on
CLIENT_PAYLOAD_MAX = 4096  # bytes in one payload a client sends
CLIENT_SENDS_PER_MINUTE = 120
SYNC_FLUSH = b"\x00\x00\xff\xff"

# opcodes
DISPATCH, HEARTBEAT, IDENTIFY, PRESENCE_UPDATE, VOICE_STATE = 0, 1, 2, 3, 4
RESUME, RECONNECT, REQUEST_MEMBERS, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 6, 7, 8, 9, 10, 11
CLIENT_OPS = (HEARTBEAT, IDENTIFY, PRESENCE_UPDATE, VOICE_STATE, RESUME, REQUEST_MEMBERS, 31)

CLOSE_REASONS = {
    4000: "Unknown error.", 4001: "Unknown opcode.", 4002: "Error while decoding payload.",
    4003: "Not authenticated.", 4004: "Authentication failed.", 4005: "Already authenticated.",
    4007: "Invalid seq.", 4008: "Rate limited.", 4009: "Session timed out.", 4010: "Invalid shard.",
    4012: "Invalid API version.", 4013: "Invalid intent(s).", 4014: "Disallowed intent(s).",
}
TRACE = ['["gateway-prd-fake-0",{"micros":0}]']

# REST buckets: (limit, window seconds) per route and major parameter (the channel)
MESSAGE_BUCKET = (5, 5.0)
OTHER_BUCKET = (50, 1.0)
UNLIMITED_BUCKET = (10000, 1.0)


class Snowflakes:
    """Discord ids: milliseconds since 2015 << 22 | worker << 17 | increment, as decimal strings, increasing."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last = 0

    def next(self):
        with self._lock:
            value = ((int(time.time() * 1000) - DISCORD_EPOCH_MS) << 22) | (1 << 17)
            self._last = max(value, self._last + 1)
            return str(self._last)


def now_iso():
    """A timestamp as Discord writes it: 2024-05-01T12:00:00.123000+00:00."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def dumps(payload):
    """JSON as Discord sends it: compact, UTF-8 (not \\u escapes)."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def user_object(user_id, username, bot=False, discriminator="0", global_name=None):
    user = {"id": str(user_id), "username": username, "global_name": global_name, "discriminator": discriminator,
            "avatar": None, "avatar_decoration_data": None, "banner": None, "accent_color": None,
            "public_flags": 0, "flags": 0, "clan": None, "primary_guild": None, "collectibles": None}
    if bot:
        user["bot"] = True
    return user


def current_user(bot):
    """GET /users/@me and READY's user: the bot with its account's fields."""
    return dict(bot, verified=True, mfa_enabled=False, locale="en-US", email=None, bio="", premium_type=0)


def member_object(joined_at):
    return {"roles": [], "nick": None, "avatar": None, "banner": None, "premium_since": None, "joined_at": joined_at,
            "pending": False, "deaf": False, "mute": False, "flags": 0, "communication_disabled_until": None}


def dm_channel_object(channel_id, recipient, last_message_id=None):
    return {"id": channel_id, "type": 1, "last_message_id": last_message_id, "flags": 0, "recipients": [recipient]}


def guild_channel_object(channel_id, guild_id, name, position=0, last_message_id=None):
    return {"id": channel_id, "type": 0, "guild_id": guild_id, "name": name, "position": position, "flags": 0,
            "permission_overwrites": [], "nsfw": False, "parent_id": None, "topic": None,
            "rate_limit_per_user": 0, "last_message_id": last_message_id}


def guild_object(guild, channels, owner_id, joined_at):
    """GUILD_CREATE's guild: small, the @everyone role, its text channels, no members."""
    gid = guild["id"]
    everyone = {"id": gid, "name": "@everyone", "permissions": "2248473465835073", "position": 0, "color": 0,
                "hoist": False, "managed": False, "mentionable": False, "flags": 0, "icon": None,
                "unicode_emoji": None, "description": None}
    return {"id": gid, "name": guild["name"], "icon": None, "splash": None, "discovery_splash": None,
            "banner": None, "description": None, "owner_id": owner_id, "region": None, "afk_channel_id": None,
            "afk_timeout": 300, "verification_level": 0, "default_message_notifications": 0,
            "explicit_content_filter": 0, "mfa_level": 0, "nsfw_level": 0, "premium_tier": 0,
            "premium_subscription_count": 0, "premium_progress_bar_enabled": False, "preferred_locale": "en-US",
            "system_channel_id": None, "system_channel_flags": 0, "rules_channel_id": None,
            "public_updates_channel_id": None, "safety_alerts_channel_id": None, "application_id": None,
            "vanity_url_code": None, "max_members": 25000000, "max_video_channel_users": 25, "features": [],
            "roles": [everyone], "emojis": [], "stickers": [], "members": [], "presences": [], "voice_states": [],
            "threads": [], "stage_instances": [], "guild_scheduled_events": [], "soundboard_sounds": [],
            "channels": [{k: v for k, v in c.items() if k != "guild_id"} for c in channels],
            "member_count": 2, "large": False, "unavailable": False, "lazy": True, "joined_at": joined_at}


def message_object(message_id, channel_id, author, content, *, mentions=(), attachments=(), embeds=(),
                   reference=None, referenced=None, nonce=None):
    """A message as REST answers it (the gateway adds guild_id and member in a guild)."""
    message = {"type": 19 if reference else 0, "content": content, "mentions": list(mentions), "mention_roles": [],
               "attachments": list(attachments), "embeds": list(embeds), "timestamp": now_iso(),
               "edited_timestamp": None, "flags": 0, "components": [], "id": message_id, "channel_id": channel_id,
               "author": author, "pinned": False, "mention_everyone": False, "tts": False}
    if reference is not None:
        message["message_reference"] = reference
        message["referenced_message"] = referenced
    if nonce is not None:
        message["nonce"] = nonce
    return message


def image_size(data):
    """(width, height) of a PNG, GIF or JPEG; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 <= len(data) and data[i] == 0xFF:
            marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[i + 5:i + 9])
                return width, height
            i += 2 + length
    return None


def attachment_object(base_url, channel_id, attachment_id, filename, data, content_type=None, width=None,
                      height=None):
    """(the attachment as a message carries it, the signed query its URL must keep)."""
    content_type = content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    stamp = int(time.time())
    signed = {"ex": "{:08x}".format(stamp + 86400), "is": "{:08x}".format(stamp), "hm": secrets.token_hex(32)}
    url = "{}/attachments/{}/{}/{}?ex={}&is={}&hm={}&".format(base_url, channel_id, attachment_id, quote(filename),
                                                              signed["ex"], signed["is"], signed["hm"])
    attachment = {"id": attachment_id, "filename": filename, "size": len(data), "url": url, "proxy_url": url,
                  "content_type": content_type}
    if content_type.startswith("image/"):
        size = (width, height) if width and height else image_size(data)
        if size:
            attachment["width"], attachment["height"] = size
    return attachment, signed


def error_body(code, message, errors=None):
    body = {"message": message, "code": code}
    if errors is not None:
        body["errors"] = errors
    return body


def form_error(field, code, message):
    """400 Invalid Form Body (50035) naming one field."""
    return 400, error_body(50035, "Invalid Form Body", {field: {"_errors": [{"code": code, "message": message}]}})


UNAUTHORIZED = (401, error_body(0, "401: Unauthorized"))
NOT_FOUND = (404, error_body(0, "404: Not Found"))
NOT_ALLOWED = (405, error_body(0, "405: Method Not Allowed"))
BAD_JSON = (400, error_body(50109, "The request body contains invalid JSON."))
EMPTY_MESSAGE = (400, error_body(50006, "Cannot send an empty message"))
UNKNOWN_CHANNEL = (404, error_body(10003, "Unknown Channel"))
UNKNOWN_MESSAGE = (404, error_body(10008, "Unknown Message"))
NOT_AUTHOR = (403, error_body(50005, "Cannot edit a message authored by another user"))
TOO_LONG = form_error("content", "BASE_TYPE_MAX_LENGTH", "Must be {} or fewer in length.".format(CONTENT_MAX))
UNKNOWN_REFERENCE = form_error("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
NOT_A_STRING = form_error("content", "BASE_TYPE_STRING", "Must be a string.")


def json_response(status, body, headers=None):
    """Discord's answer: exactly `application/json` (discord.py compares it), through Google's front (Via)."""
    headers = dict(headers or {}, Via="1.1 google")
    if status == 204:
        return web.Response(status=204, headers=headers)
    return web.Response(status=status, body=dumps(body).encode("utf-8"), headers=headers,
                        content_type="application/json")


async def read_body(request):
    """(JSON body or form fields or None, [uploaded files], error or None). A body in another content type is
    not read at all, as Discord does (a send then has no content: 50006)."""
    ctype = request.content_type
    if ctype == "multipart/form-data":
        payload, fields, files = None, {}, []
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            data = bytes(await part.read())
            if part.filename is not None:
                files.append({"field": part.name, "filename": part.filename, "data": data,
                              "content_type": part.headers.get("Content-Type") or None})
            elif part.name == "payload_json":
                try:
                    payload = json.loads(data)
                except ValueError:
                    return None, files, BAD_JSON
            else:
                fields[part.name] = data.decode("utf-8", "replace")
        return (payload if payload is not None else fields), files, None
    raw = await request.read()
    if ctype == "application/x-www-form-urlencoded":
        return dict(parse_qsl(raw.decode("utf-8", "replace"))), [], None
    if ctype != "application/json" or not raw:
        return None, [], None
    try:
        return json.loads(raw), [], None
    except ValueError:
        return None, [], BAD_JSON


class Buckets:
    """Per-route rate limits: each (route, channel) allows `limit` requests in a window that starts with the
    first; more in the window answer 429. `limits(route)` gives (limit, window)."""

    def __init__(self, limits):
        self.limits = limits
        self._state = {}

    def take(self, route, major, now):
        """(allowed, headers, retry_after, too_early): too_early when a 429 in this window was already given."""
        limit, window = self.limits(route)
        entry = self._state.get((route, major))
        if entry is None or now >= entry["reset"]:
            entry = self._state[(route, major)] = {"reset": now + window, "count": 0, "refused": False}
        reset_after = max(0.0, entry["reset"] - now)
        if entry["count"] >= limit:
            too_early, entry["refused"] = entry["refused"], True
            return False, self.headers(route, limit, 0, reset_after), reset_after, too_early
        entry["count"] += 1
        return True, self.headers(route, limit, limit - entry["count"], reset_after), None, False

    @staticmethod
    def headers(route, limit, remaining, reset_after):
        return {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": "{:.3f}".format(time.time() + reset_after),
                "X-RateLimit-Reset-After": "{:.3f}".format(reset_after),
                "X-RateLimit-Bucket": hashlib.md5(route.encode()).hexdigest()}


def rate_limited(retry_after, global_, headers=None):
    """The 429: JSON body with a float retry_after, Retry-After in whole seconds, and the scope."""
    headers = dict(headers or {})
    headers["Retry-After"] = str(max(1, int(-(-retry_after // 1))))
    headers["X-RateLimit-Scope"] = "global" if global_ else "user"
    if global_:
        headers["X-RateLimit-Global"] = "true"
    body = {"message": "You are being rate limited.", "retry_after": round(retry_after, 3), "global": global_}
    return json_response(429, body, headers)


class ZlibStream:
    """zlib-stream transport compression: one compressor per connection, each payload ends in a sync flush."""

    def __init__(self):
        self._compressor = zlib.compressobj()

    def frame(self, text):
        return self._compressor.compress(text.encode("utf-8")) + self._compressor.flush(zlib.Z_SYNC_FLUSH)


def payload(op, d=None, s=None, t=None):
    return {"t": t, "s": s, "op": op, "d": d}
