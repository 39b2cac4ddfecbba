# Speech to text: a voice note on flash sent to POST /v1/audio/transcriptions (multipart, streamed) -> its text.
from mimi import jsontext
from mimi.net import http
from mimi.platform import const
from mimi.voice import multipart, service
from mimi.voice.service import VoiceError

ANSWER_MAX = const(32768)  # bytes of the JSON answer: about half an hour of speech


async def transcribe(config, path, file_name, media_type):
    """The text of the audio file at path; VoiceError (with what went wrong) otherwise."""
    found = service.stt_settings(config)
    if found is None:
        raise VoiceError("no speech-to-text service is set (set_stt <url> [model])")
    url, model, key = found
    content_type, body = multipart.body((("model", model), ("response_format", "json")), "file", path,
                                        file_name or "voice.ogg", media_type or "audio/ogg")
    response = await service.post(config, "speech-to-text", url, key, content_type, body)
    del body
    try:
        raw = await response.read(ANSWER_MAX)
    except http.HTTPError as exc:
        raise VoiceError("the speech-to-text answer broke off ({})".format(exc))
    finally:
        await response.aclose()
    try:
        answer = jsontext.loads(raw)
    except ValueError:
        raise VoiceError("the speech-to-text service answered something that is not JSON")
    del raw
    text = answer.get("text") if isinstance(answer, dict) else None
    if not isinstance(text, str):
        raise VoiceError("the speech-to-text answer holds no text")
    return " ".join(text.split())
