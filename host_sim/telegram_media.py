# The fake Telegram's media: the files a message may carry (as the Bot API describes them), and the uploads a
# bot sends (sendVoice as multipart, its caption and reply_parameters), mixed into telegram_world.World.
import time

from host_sim.telegram_params import ApiError, bad_request, formatted

CAPTIONED = ("photo", "video", "document", "audio", "voice", "animation")
CAPTION_MAX = 1024  # characters of a caption after entity parsing
VOICE_UPLOAD_MAX = 50 * 1024 * 1024  # bots may upload files up to 50 MB


def file_object(n, **extra):
    extra.update(file_id="BQACAgIAAx{}".format(n), file_unique_id="AgAD{}".format(n))
    return extra


MEDIA = {
    "photo": lambda n: [file_object(n, width=90, height=90, file_size=1500),
                        file_object(n + 1, width=800, height=800, file_size=64000)],
    "sticker": lambda n: file_object(n, type="regular", width=512, height=512, is_animated=False,
                               is_video=False, emoji="\U0001F44D"),
    "voice": lambda n: file_object(n, duration=2, mime_type="audio/ogg", file_size=5200),
    "audio": lambda n: file_object(n, duration=30, mime_type="audio/mpeg", file_size=480000),
    "video": lambda n: file_object(n, width=640, height=360, duration=3, file_size=300000),
    "video_note": lambda n: file_object(n, length=240, duration=4, file_size=90000),
    "animation": lambda n: file_object(n, width=320, height=240, duration=2, file_size=80000),
    "document": lambda n: file_object(n, file_name="notes.pdf", mime_type="application/pdf",
                                file_size=20000),
    "location": lambda n: {"latitude": 52.52, "longitude": 13.405},
    "contact": lambda n: {"phone_number": "+15550100", "first_name": "B"},
}


class Uploads:
    """World's methods for a bot's uploads (the chat's state is World's: chat(), flood, bot, _files)."""

    def send_voice(self, args):
        """sendVoice: an uploaded Ogg/Opus file shows as a voice note (another format as a document), with an
        optional caption (0-1024 characters after entity parsing) and reply_parameters."""
        chat = self.chat(args)
        upload = args.args.get("voice")
        if upload is None or isinstance(upload, str) and not upload:
            raise bad_request("there is no voice in the request")
        if isinstance(upload, str):
            raise bad_request("wrong remote file identifier specified: Wrong string length")
        if not upload.data:
            raise bad_request("file must be non-empty")
        if len(upload.data) > VOICE_UPLOAD_MAX:
            raise ApiError(413, "Request Entity Too Large")
        caption, entities = formatted(args, "caption", allow_empty=True)
        if len(caption) > CAPTION_MAX:
            raise bad_request("message caption is too long")
        replied = self._replied(chat, args)
        if self.flood:
            self.flood.check(chat["chat"]["id"])
        message_id = chat["next_message_id"]
        chat["next_message_id"] += 1
        message = {"message_id": message_id, "from": dict(self.bot), "chat": dict(chat["chat"]),
                   "date": int(time.time())}
        self._files += 1
        media = file_object(self._files, file_size=len(upload.data))
        if upload.data.startswith(b"OggS"):
            message["voice"] = dict(media, duration=args.integer("duration"), mime_type="audio/ogg")
        else:
            message["document"] = dict(media, file_name=upload.filename or "file",
                                       mime_type=upload.content_type or "application/octet-stream")
        if caption:
            message["caption"] = caption
            if entities:
                message["caption_entities"] = entities
        if replied is not None:
            message["reply_to_message"] = replied
        chat["messages"][message_id] = {"message": message, "from_bot": True, "raw": args.text("caption"),
                                        "parse_mode": args.text("parse_mode") or None, "data": upload.data}
        return dict(message), None

    def _replied(self, chat, args):
        """The message reply_parameters names (None when there is none to name, or it is gone and
        allow_sending_without_reply says go on)."""
        params = args.json("reply_parameters", "can't parse reply parameters JSON object")
        if params is None:
            return None
        if not isinstance(params, dict) or not isinstance(params.get("message_id"), int):
            raise bad_request("can't parse reply parameters JSON object")
        stored = chat["messages"].get(params["message_id"])
        if stored is None:
            if params.get("allow_sending_without_reply"):
                return None
            raise bad_request("message to be replied not found")
        replied = dict(stored["message"])
        replied.pop("reply_to_message", None)
        return replied


class VoiceUpdates:
    """FakeTelegram's voice notes and audio files from users (its files, world and _inject)."""

    def voice_message(self, user_id, data, duration, caption=None, chat_id=None):
        """A voice note (Ogg/Opus bytes) as Telegram delivers it; returns the update_id."""
        def build():
            message = self._world._incoming(user_id, chat_id, None, "A")
            entry = self.files.add(data, "voice", "oga")
            message["voice"] = {"file_id": entry["file_id"], "file_unique_id": entry["file_unique_id"],
                                "duration": duration, "mime_type": "audio/ogg", "file_size": len(data)}
            if caption is not None:
                set_caption(message, caption)
            update_id = self._world.add_update("message", message)
            self.message_ids[update_id] = message["message_id"]
            return update_id
        return self._inject(build)

    def audio_message(self, user_id, data, file_name, mime_type, duration, caption=None, chat_id=None):
        """A music/audio file (sent as audio, not as a voice note); returns the update_id."""
        def build():
            message = self._world._incoming(user_id, chat_id, None, "A")
            entry = self.files.add(data, "music", file_name.rsplit(".", 1)[-1] if "." in file_name else "mp3")
            message["audio"] = {"file_id": entry["file_id"], "file_unique_id": entry["file_unique_id"],
                                "duration": duration, "file_name": file_name, "mime_type": mime_type,
                                "file_size": len(data)}
            if caption is not None:
                set_caption(message, caption)
            return self._world.add_update("message", message)
        return self._inject(build)


def set_caption(message, caption):
    """A caption with the entities Telegram finds in it (mentions, commands), as caption_entities."""
    from host_sim.telegram_world import found_entities

    message["caption"] = caption
    entities = found_entities(caption)
    if entities:
        message["caption_entities"] = entities
