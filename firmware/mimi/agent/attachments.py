# Photos and files sent to Claude: what is accepted, where it waits on flash, its content block, its trace.
from mimi.platform import const, log
from mimi.storage import files

INBOX = "files/inbox"  # under the data root: a received file waits here for its turn, then goes
PHOTO_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TEXT_SUFFIXES = (".txt", ".md", ".csv", ".log", ".json", ".py", ".yaml", ".yml", ".ini", ".xml", ".html", ".tsv")
TEXT_TYPES = ("application/json", "application/xml", "application/x-yaml", "application/csv")
# Audio the speech-to-text services take (voice/): a file of these is heard, not read.
AUDIO_SUFFIXES = (".ogg", ".oga", ".opus", ".mp3", ".m4a", ".wav", ".webm", ".flac", ".mpga", ".mpeg")
DEFAULT_PHOTO_QUESTION = "What is in this photo? Describe what matters in a few sentences."
DEFAULT_FILE_QUESTION = "Here is a file: what is in it? Summarise it briefly."
PLACEHOLDER_MAX = const(200)  # characters of a caption kept in the session's placeholder
NAME_MAX = const(64)
NS = "media_config"
_MAGIC = ((b"\xff\xd8\xff", "image/jpeg"), (b"\x89PNG\r\n\x1a\n", "image/png"), (b"GIF8", "image/gif"))


class Refused(Exception):
    """A file that will not be sent, with the answer for the user."""


def limits(config):
    """(photo bytes, photo long side px, file bytes) from the settings."""
    return config.get(NS, "photo_max_bytes"), config.get(NS, "photo_max_px"), config.get(NS, "file_max_bytes")


def size_text(n):
    if n >= 1024 * 1024:
        return "{:.1f} MB".format(n / (1024 * 1024)).replace(".0 MB", " MB")
    return "{} KB".format((n + 1023) // 1024)


def safe_name(name, default="file"):
    """A file name of letters, digits, '.', '-' and '_' only (no folders), at most NAME_MAX characters."""
    out = []
    for ch in (name or "").split("/")[-1]:
        out.append(ch if (ch.isalpha() and ord(ch) < 128) or ch.isdigit() or ch in ".-_" else "_")
    cleaned = "".join(out).lstrip(".")[-NAME_MAX:]
    return cleaned or default


def is_audio(name, mime_type):
    return (mime_type or "").lower().startswith("audio/") or (name or "").lower().endswith(AUDIO_SUFFIXES)


def voice_max(config):
    """The largest voice note or audio file taken, in bytes (voice_config.max_bytes)."""
    return config.get("voice_config", "max_bytes")


def document_kind(name, mime_type, size, max_bytes):
    """"pdf" or "text" for a file Claude can read within the limit; Refused with the answer otherwise."""
    low = (name or "").lower()
    mime = (mime_type or "").lower()
    if mime == "application/pdf" or low.endswith(".pdf"):
        kind = "pdf"
    elif mime.startswith("text/") or mime in TEXT_TYPES or low.endswith(TEXT_SUFFIXES):
        kind = "text"
    else:
        raise Refused("I can read photos, PDFs and plain-text files (.txt, .md, .csv, .json...), but not {} "
                      "files. Please send it as a PDF or as text.".format(mime or "this kind of"))
    if size is not None and size > max_bytes:
        raise Refused("{} is {}, over my limit of {} for files. Please send a smaller file (or the part "
                      "that matters).".format(name or "This file", size_text(size), size_text(max_bytes)))
    return kind


def sniff_image(path):
    """The media type of an image file from its first bytes, or None."""
    with open(path, "rb") as f:
        head = f.read(12)
    for magic, media_type in _MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def inbox_path(root, stem, ext):
    folder = files.join(root, INBOX)
    files.makedirs(folder)
    return files.join(folder, "{}{}".format(stem, ext))


def media(kind, path, media_type, name=None, size=0):
    """The description a channel puts in meta["media"] for the agent."""
    return {"kind": kind, "path": path, "media_type": media_type, "name": name, "size": size}


def question(text, item):
    text = (text or "").strip()
    if text:
        return text
    return DEFAULT_PHOTO_QUESTION if item["kind"] == "image" else DEFAULT_FILE_QUESTION


def placeholder(text, item):
    """What the session keeps instead of the bytes: "[photo: caption]", "[file notes.pdf: caption]"."""
    caption = " ".join((text or "").split())
    if len(caption) > PLACEHOLDER_MAX:
        caption = caption[: PLACEHOLDER_MAX - 3] + "..."
    what = {"image": "photo", "audio": "voice"}.get(item["kind"]) or "file " + (item.get("name") or "")
    return "[{}: {}]".format(what.strip(), caption) if caption else "[{}]".format(what.strip())


def block(item):
    """The content block that carries the file, its data read from flash while the request is sent."""
    from mimi.llm.file_pieces import Base64File, TextFile

    if item["kind"] == "image":
        return {"type": "image", "source": {"type": "base64", "media_type": item["media_type"],
                                            "data": Base64File(item["path"])}}
    if item["kind"] == "pdf":
        out = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                              "data": Base64File(item["path"])}}
    else:
        out = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                              "data": TextFile(item["path"])}}
    if item.get("name"):
        out["title"] = item["name"]
    return out


def attach(turn, item):
    """Put the file's block into a user turn from Context.user_turn, before the user's words."""
    content = turn["content"]
    content.insert(len(content) - 1, block(item))
    return turn


def of(message):
    meta = message.meta
    item = meta.get("media")
    return item if isinstance(item, dict) and item.get("path") else None


def discard(message):
    """After the turn: the received file goes, unless the agent kept it (keep_file moved it)."""
    item = of(message)
    if item is not None:
        try:
            files.remove(item["path"])
        except OSError as exc:
            log("media: could not remove {}: {}".format(item["path"], exc))
