# A voice note's turn begins here (agent/loop.py): the note sent to the speech-to-text service, the transcript
# shown to the user, and the turn goes on with "[voice] <transcript>" as the user's words.
import os

from mimi.agent import attachments
from mimi.bus.message import Message
from mimi.platform import const, log
from mimi.storage import files
from mimi.voice import ogg, usage
from mimi.voice.service import VoiceError

MARK = "[voice] "  # how the session (and Claude) sees what was said
HEARD = "\U0001f3a4 heard: {}"
NO_SERVICE = ("I can't listen to voice notes yet: my owner can set a speech-to-text service on my console with "
              "set_stt <url> [model] and set_stt_key <key> (OpenAI, Groq or a Whisper server on the LAN).")
_FAILED = "I could not understand your voice note: {}. {}"
_KEPT = "I kept the recording: send /retry to try again."
_NOTHING = "I heard nothing in your voice note (silence?). Please try again."
_NONE_KEPT = "No voice note of yours is waiting for a retry."
_KEPT_STEM = "voice_"  # files/inbox/voice_<channel>_<chat>.<ext>: one failed note kept per chat
_BYTES_PER_S = const(4000)  # a duration guessed from the size when the file does not say (32 kbit/s)
_TYPES = (".ogg audio/ogg .oga audio/ogg .opus audio/ogg .mp3 audio/mpeg .m4a audio/mp4 .mp4 audio/mp4 "
          ".wav audio/wav .webm audio/webm .flac audio/flac .mpga audio/mpeg .mpeg audio/mpeg ")


def seconds_of(item):
    """The note's length: as the channel said (Telegram), from the Ogg pages, else guessed from its size."""
    duration = item.get("duration")
    if isinstance(duration, int) and duration > 0:
        return duration
    size = item.get("size") or files.size(item["path"])
    found = ogg.duration_s(item["path"], size)
    return found if found else max(1, size // _BYTES_PER_S)


async def transcribed(agent, message):
    """The turn's message with the note's transcript as its text, or a str: the answer that ends the turn.
    message: a voice note (meta["media"] of kind audio), or /retry (the chat's kept note, if any)."""
    item = attachments.of(message)
    if item is None:  # /retry
        item = kept(agent.context.flash.root, message)
        if item is None:
            return _NONE_KEPT
        message.meta = dict(message.meta, media=item)  # the note leaves flash with this turn
    if not agent.config.get("voice_config", "stt_url"):
        return NO_SERVICE
    seconds = seconds_of(item)
    budget = _budget(agent)
    refusal = usage.refusal(budget, seconds, 0)
    if refusal:
        return refusal
    from mimi.voice import stt

    try:
        text = await stt.transcribe(agent.config, item["path"], item.get("name"), item.get("media_type"))
    except VoiceError as exc:
        log("voice: transcription failed: {}".format(exc))
        return _FAILED.format(exc, _KEPT if keep(agent.context.flash.root, message, item) else "Please send it again.")
    usage.spent(budget, seconds, 0)
    if not text:
        return _NOTHING
    notice = {"kind": "notice", "reply_to": item.get("message_id")}
    await agent.bus.outbound.put(Message(message.channel, message.chat_id, HEARD.format(text), notice))
    meta = dict(message.meta)
    meta.pop("media")
    meta["voice"] = True  # the reply may be spoken (voice_config.reply auto), as an answer to the note
    meta["voice_message_id"] = item.get("message_id")
    caption = " ".join((item.get("caption") or "").split())
    said = MARK + text + ("\n(caption: {})".format(caption) if caption else "")
    return Message(message.channel, message.chat_id, said, meta)


def _budget(agent):
    for gate in agent.gates:
        if hasattr(gate, "save_soon"):
            return gate
    return None


def _kept_stem(message):
    return _KEPT_STEM + attachments.safe_name("{}_{}".format(message.channel, message.chat_id))


def keep(root, message, item):
    """Move a note that failed to the chat's kept place (the one kept before goes); False if it cannot."""
    old = kept(root, message)
    ext = item["path"].rsplit(".", 1)[-1] if "." in item["path"].rsplit("/", 1)[-1] else "ogg"
    path = attachments.inbox_path(root, _kept_stem(message), "." + ext)
    try:
        if old is not None and old["path"] != item["path"]:
            files.remove(old["path"])
        if path != item["path"]:
            os.rename(item["path"], path)
    except OSError as exc:
        log("voice: could not keep the note ({})".format(exc))
        return False
    message.meta.pop("media", None)  # not removed after the turn (agent/loop.py)
    return True


def kept(root, message):
    """The media item of the chat's kept note, or None."""
    folder = files.join(root, attachments.INBOX)
    stem = _kept_stem(message) + "."
    for name in files.listdir(folder):
        if name.startswith(stem):
            path = files.join(folder, name)
            ext = name[len(stem) - 1:]
            at = _TYPES.find(ext + " ")
            media_type = _TYPES[at + len(ext) + 1:_TYPES.find(" ", at + len(ext) + 1)] if at >= 0 else "audio/ogg"
            return attachments.media("audio", path, media_type, "voice" + ext, files.size(path))
    return None
