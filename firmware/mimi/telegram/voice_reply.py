# A reply spoken on Telegram: its first part made into speech (voice/tts.py), streamed from flash to sendVoice
# with the text as caption when it fits, else followed by the text; any failure falls back to the text alone.
from mimi.agent import attachments
from mimi.platform import const, log
from mimi.storage import files
from mimi.telegram.api import TelegramError

CAPTION_MAX = const(1024)  # characters of a voice note's caption
SEND_TIMEOUT_S = const(60)
_FAILED = "\U0001f507 I could not speak this reply ({}); here it is as text."


async def send(live, chat_id, text, request):
    """Deliver a reply as a voice note (and text); the text path when speech fails."""
    from mimi.voice import tts, usage
    from mimi.voice.service import VoiceError

    spoken = tts.spoken_part(text)
    budget = getattr(live.app, "budget", None)
    refusal = usage.refusal(budget, 0, len(spoken)) if spoken else None
    path = attachments.inbox_path(live.app.flash.root, "tts_{}".format(attachments.safe_name(str(chat_id))), ".ogg")
    try:
        if refusal or not spoken:
            raise VoiceError(refusal or "nothing to say aloud")
        await _quietly(live, chat_id, "record_voice")
        size = await tts.speak(live.app.config, spoken, path)
        usage.spent(budget, 0, len(spoken))
        fits = len(text) <= CAPTION_MAX and not live.sender.editing(chat_id)
        if fits:
            await live.sender.stop(chat_id)  # the draft gives way to the voice note and its caption
        await _quietly(live, chat_id, "upload_voice")
        await _send_voice(live, chat_id, path, size, str(text) if fits else None, request.get("voice_message_id"))
    except (VoiceError, TelegramError, OSError) as exc:  # OSError: http.HTTPError too
        log("Telegram: voice reply failed: {}".format(exc))
        await live.sender.reply(chat_id, text)
        await live.sender.send_plain(chat_id, _FAILED.format(exc))
        return
    finally:
        files.remove(path)
    if not fits:
        await live.sender.reply(chat_id, text)  # the whole text follows (a streamed message is edited to it)


async def _send_voice(live, chat_id, path, size, caption, reply_to):
    from mimi.telegram import markup
    from mimi.voice import multipart, ogg

    fields = [("chat_id", str(chat_id))]
    seconds = ogg.duration_s(path, size)
    if seconds:
        fields.append(("duration", str(seconds)))
    if reply_to:
        fields.append(("reply_parameters", '{{"message_id": {}, "allow_sending_without_reply": true}}'.format(
            int(reply_to))))
    for html in (True, False) if caption else (False,):  # HTML from the Markdown; plain if Telegram refuses it
        extra = [("caption", markup.to_html(caption)), ("parse_mode", "HTML")] if html else (
            [("caption", caption)] if caption else [])
        content_type, body = multipart.body(fields + extra, "voice", path, "reply.ogg", "audio/ogg")
        try:
            return await live.api.call("sendVoice", None, SEND_TIMEOUT_S, body, content_type)
        except TelegramError as exc:
            if not html or "parse entities" not in exc.description:
                raise


async def _quietly(live, chat_id, action):
    try:
        await live.api.call("sendChatAction", {"chat_id": int(chat_id) if str(chat_id).lstrip("-").isdigit()
                                               else chat_id, "action": action})
    except Exception:  # a missing chat action costs nothing
        pass
