# Telegram photos, files and voice notes: the size that fits, getFile, and the download streamed to flash.
from mimi.agent import attachments
from mimi.agent.attachments import Refused
from mimi.net import http
from mimi.platform import const, log

_DOWNLOAD_TRIES = const(3)  # a download cut off is tried again this often in all
_DOWNLOAD_TIMEOUT_S = const(30)  # silence while downloading
DOWNLOAD_DEADLINE_S = const(120)
_PIECE = const(1024)  # bytes written to flash per step
_CUT = ("The download of your {} from Telegram broke off ({} tries); nothing was kept. "
        "Please send it again in a moment.")


def pick_photo(sizes, max_bytes, max_px):
    """The largest PhotoSize within both limits (Telegram lists them smallest first); Refused if none."""
    best = None
    for size in sizes if isinstance(sizes, list) else ():
        if not isinstance(size, dict) or not isinstance(size.get("file_id"), str):
            continue
        long_side = max(size.get("width") or 0, size.get("height") or 0)
        nbytes = size.get("file_size")
        if long_side > max_px or (isinstance(nbytes, int) and nbytes > max_bytes):
            continue
        if best is None or long_side * 10**7 + (nbytes or 0) > _rank(best):
            best = size
    if best is None:
        raise Refused("This photo is too large for me even in Telegram's smallest size (my limit: {} and {} px "
                      "on the long side). Please send a smaller one.".format(attachments.size_text(max_bytes), max_px))
    return best


def _rank(size):
    return max(size.get("width") or 0, size.get("height") or 0) * 10**7 + (size.get("file_size") or 0)


def _document(document, limits):
    """(kind, media type, name, size) of a document the agent may read; Refused otherwise."""
    name = document.get("file_name") or "file"
    mime = (document.get("mime_type") or "").lower()
    size = document.get("file_size")
    if mime in attachments.PHOTO_TYPES:  # a photo sent "as a file": read as a photo when it fits
        if isinstance(size, int) and size > limits[0]:
            raise Refused("{} is {}, over my limit of {} for images. Send it as a photo instead (Telegram then "
                          "makes it smaller).".format(name, attachments.size_text(size),
                                                      attachments.size_text(limits[0])))
        return "image", mime, name, size
    kind = attachments.document_kind(name, mime, size, limits[2])
    return kind, "application/pdf" if kind == "pdf" else "text/plain", name, size


def _audio(message):
    """The message's voice note or audio file (an audio file sent as a document too), or None."""
    audio = message.get("voice") or message.get("audio")
    document = message.get("document")
    if audio is None and isinstance(document, dict) and attachments.is_audio(document.get("file_name"),
                                                                              document.get("mime_type")):
        audio = document
    return audio if isinstance(audio, dict) and isinstance(audio.get("file_id"), str) else None


async def _receive_audio(api, root, message, update_id, audio):
    """A voice note (Ogg/Opus) or an audio file into the inbox, size-capped: its meta["media"] (kind audio)."""
    cap = attachments.voice_max(api.config)
    what = "voice note" if "voice" in message else "audio file"
    size = audio.get("file_size")
    if isinstance(size, int) and size > cap:
        raise Refused("Your {} is {}, over my limit of {} (about {} minutes of voice). Please send a shorter one."
                      .format(what, attachments.size_text(size), attachments.size_text(cap), cap // 150000 or 1))
    name = audio.get("file_name") or "voice.ogg"
    ext = "." + attachments.safe_name(name.rsplit(".", 1)[-1].lower() if "." in name else "ogg", "ogg")[:8]
    path = attachments.inbox_path(root, "tg_{}".format(update_id), ext)
    size = await download(api, audio["file_id"], path, cap, what)
    item = attachments.media("audio", path, audio.get("mime_type") or "audio/ogg", attachments.safe_name(name), size)
    item["duration"] = audio.get("duration")
    item["message_id"] = message.get("message_id")  # the transcript answers it
    return item


async def receive(api, root, message, update_id):
    """Download the message's photo, document or voice note into the inbox; the meta["media"] dict for the
    agent."""
    audio = _audio(message)
    if audio is not None:
        return await _receive_audio(api, root, message, update_id, audio)
    limits = attachments.limits(api.config)
    if "photo" in message:
        size = pick_photo(message["photo"], limits[0], limits[1])
        file_id, kind, media_type, name, cap, what = size["file_id"], "image", "image/jpeg", None, limits[0], "photo"
        ext = ".jpg"
    else:
        document = message.get("document") or {}
        if not isinstance(document.get("file_id"), str):
            raise Refused("I could not read this file.")
        kind, media_type, name, _size = _document(document, limits)
        file_id, what = document["file_id"], "file"
        cap = limits[0] if kind == "image" else limits[2]
        ext = "." + name.rsplit(".", 1)[-1].lower()[:8] if "." in name else ""
    ext = "." + attachments.safe_name(ext.lstrip("."), "bin")[:8]
    path = attachments.inbox_path(root, "tg_{}".format(update_id), ext)
    size = await download(api, file_id, path, cap, what)
    if kind == "image":
        media_type = attachments.sniff_image(path)
        if media_type is None:
            from mimi.storage import files

            files.remove(path)
            raise Refused("This image is not a JPEG, PNG, GIF or WebP file, so I cannot look at it.")
    return attachments.media(kind, path, media_type, attachments.safe_name(name) if name else None, size)


async def download(api, file_id, path, max_bytes, what="file"):
    """getFile, then the bytes streamed into path (never whole in RAM); the size. Refused on failure, with
    nothing left on flash."""
    from mimi.storage import files
    from mimi.telegram.api import TelegramError

    try:
        found = await api.call("getFile", {"file_id": file_id})
    except TelegramError as exc:
        raise Refused("Telegram would not give me your {} ({}). Please send it again.".format(what, exc.description))
    except http.HTTPError as exc:
        raise Refused("I could not reach Telegram to fetch your {} ({}). Please send it again.".format(what, exc))
    file_path = found.get("file_path") if isinstance(found, dict) else None
    if not isinstance(file_path, str) or not file_path:
        raise Refused("Telegram cannot hand out this {} (bots may download files up to 20 MB).".format(what))
    if isinstance(found.get("file_size"), int) and found["file_size"] > max_bytes:
        raise Refused("Your {} is {}, over my limit of {}.".format(what, attachments.size_text(found["file_size"]),
                                                                   attachments.size_text(max_bytes)))
    base = api.config.get("tg_config", "api_base").rstrip("/")
    url = "{}/file/bot{}/{}".format(base, api.config.get("tg_config", "bot_token"), file_path)
    for attempt in range(1, _DOWNLOAD_TRIES + 1):
        try:
            return await _fetch(url, path, max_bytes, what, found.get("file_size"))
        except http.HTTPError as exc:  # cut, timed out, unreachable: try again, then say so
            files.remove(path)
            log("Telegram: download of a {} failed ({}), try {} of {}".format(what, exc, attempt, _DOWNLOAD_TRIES))
        except BaseException:
            files.remove(path)
            raise
    raise Refused(_CUT.format(what, _DOWNLOAD_TRIES))


async def _fetch(url, path, max_bytes, what, expected=None):
    response = await http.request("GET", url, None, None, _DOWNLOAD_TIMEOUT_S, None, DOWNLOAD_DEADLINE_S)
    try:
        if response.status == 404:
            raise Refused("Telegram no longer has your {} (404). Please send it again.".format(what))
        if response.status != 200:
            raise http.HTTPError("HTTP {}".format(response.status))
        total = await response.save(path, max_bytes, _PIECE)
        if total is None:
            raise Refused("Your {} is over my limit of {}.".format(what, attachments.size_text(max_bytes)))
        if isinstance(expected, int) and total != expected:  # a body cut short without a Content-Length
            raise http.HTTPError("the file ended after {} of {} bytes".format(total, expected))
        return total
    finally:
        await response.aclose()
