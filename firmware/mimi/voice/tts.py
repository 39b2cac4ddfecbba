# Text to speech: a reply's first part sent to POST /v1/audio/speech; the Ogg/Opus answer streamed to flash.
import json

from mimi.net import http
from mimi.platform import const
from mimi.storage import files
from mimi.voice import ogg, service
from mimi.voice.service import VoiceError

_AUDIO_MAX = const(2097152)  # bytes of speech kept: far above a spoken part of SPOKEN_MAX characters
SPOKEN_MAX = const(1000)  # characters spoken; a longer reply is spoken up to a sentence end before this
_PIECE = const(1024)
_MARKUP = "*_`#>|~"  # Markdown signs read aloud as themselves: left out of what is spoken
_SENTENCE_ENDS = ".!?\n"


def spoken_part(text):
    """What is said of a reply: its first SPOKEN_MAX characters or less (cut at a sentence end, else a space),
    Markdown signs and link targets left out. text: a str or a Text (pieces: only the start is joined)."""
    pieces, size = [], 0
    for piece in getattr(text, "pieces", (text,)):
        pieces.append(piece[: SPOKEN_MAX * 2 - size])
        size += len(pieces[-1])
        if size >= SPOKEN_MAX * 2:
            break
    said = _plain("".join(pieces))
    del pieces
    if len(said) > SPOKEN_MAX:
        cut = max(said.rfind(end, 0, SPOKEN_MAX) for end in _SENTENCE_ENDS)
        if cut < SPOKEN_MAX // 2:
            cut = said.rfind(" ", 0, SPOKEN_MAX)
        said = said[: cut + 1 if cut > 0 else SPOKEN_MAX].strip()
    return said


def _plain(text):
    """Markdown read as speech: [label](url) -> label, signs out, each line's spaces tidied."""
    out = []
    at = 0
    while True:
        start = text.find("](", at)
        if start < 0:
            break
        end = text.find(")", start)
        if end < 0:
            break
        out.append(text[at:start])
        at = end + 1
    out.append(text[at:])
    text = "".join(out).replace("[", "")
    for sign in _MARKUP:
        text = text.replace(sign, " " if sign in "|" else "")
    return "\n".join(" ".join(line.split()) for line in text.split("\n") if line.strip())


async def speak(config, text, path):
    """The speech of text written to path as Ogg/Opus: its size; VoiceError otherwise (nothing left on flash)."""
    found = service.tts_settings(config)
    if found is None:
        raise VoiceError("no text-to-speech service is set (set_tts <url> [model] [voice])")
    url, model, voice, key = found
    body = json.dumps({"model": model, "input": text, "voice": voice, "response_format": "opus"}).encode()
    response = await service.post(config, "text-to-speech", url, key, "application/json", body)
    del body
    try:
        size = await response.save(path, _AUDIO_MAX, _PIECE)
        if size is None:
            raise VoiceError("the speech was longer than my limit of {} KB".format(_AUDIO_MAX // 1024))
        if not ogg.is_ogg(path):
            raise VoiceError("the text-to-speech service did not send Ogg/Opus audio")
        return size
    except http.HTTPError as exc:
        files.remove(path)
        raise VoiceError("the speech download broke off ({})".format(exc))
    except BaseException:
        files.remove(path)
        raise
    finally:
        await response.aclose()
