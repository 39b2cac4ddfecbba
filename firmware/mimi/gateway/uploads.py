# Web chat attachments: POST /upload streams a photo or file to flash; an "attach" frame sends it to Claude.
import asyncio
import json

from microdot import Response

from mimi.agent import attachments
from mimi.agent.attachments import Refused
from mimi.gateway import auth
from mimi.platform import const, log
from mimi.storage import files

PENDING_MAX = const(4)  # uploads waiting for their message; the oldest is dropped past this
READ_TIMEOUT_S = const(10)  # silence while an upload streams in
_PIECE = const(1024)


def _answer(status, body):
    return Response(json.dumps(body), status, {"Content-Type": "application/json"})


class Uploads:
    def __init__(self, app):
        self.app = app
        self.pending = []  # (id, item), oldest first
        self._next = 1

    def _kind(self, name, media_type, size):
        photo_max, _, file_max = attachments.limits(self.app.config)
        if attachments.is_audio(name, media_type):  # heard, not read (voice/heard.py)
            voice_max = attachments.voice_max(self.app.config)
            if size > voice_max:
                raise Refused("This audio file is {}, over my limit of {} for voice notes.".format(
                    attachments.size_text(size), attachments.size_text(voice_max)))
            return "audio", voice_max
        if media_type in attachments.PHOTO_TYPES:
            if size > photo_max:
                raise Refused("This image is {}, over my limit of {} for photos.".format(
                    attachments.size_text(size), attachments.size_text(photo_max)))
            return "image", photo_max
        kind = attachments.document_kind(name, media_type, size, file_max)
        return kind, file_max

    async def receive(self, request):
        """POST /upload?name=<file name>, Content-Type the file's type, the bytes as the body."""
        if not auth.admits(self.app.config, request):
            return _answer(401, {"error": "gateway token missing or wrong"})
        size = request.content_length or 0
        name = attachments.safe_name(request.args.get("name") or "file")
        media_type = (request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        photo_max, photo_px, file_max = attachments.limits(self.app.config)
        try:
            if size <= 0:
                raise Refused("The upload is empty.")
            kind, _ = self._kind(name, media_type, size)
        except Refused as exc:
            return _answer(413 if "limit" in str(exc) else 415, {
                "error": str(exc), "photo_max_bytes": photo_max, "photo_max_px": photo_px, "file_max_bytes": file_max})
        upload_id = "up_{}".format(self._next)
        self._next += 1
        ext = "." + attachments.safe_name(name.rsplit(".", 1)[-1] if "." in name else "bin")[:8]
        path = attachments.inbox_path(self.app.flash.root, "ws_" + upload_id, ext)
        try:
            await self._store(request, path, size)
            if kind == "image":
                media_type = attachments.sniff_image(path)
                if media_type is None:
                    raise Refused("This image is not a JPEG, PNG, GIF or WebP file.")
        except Refused as exc:
            files.remove(path)
            return _answer(415, {"error": str(exc)})
        except (OSError, asyncio.TimeoutError) as exc:
            files.remove(path)
            return _answer(400, {"error": "the upload broke off ({}); please try again".format(exc)})
        item = attachments.media(kind, path, media_type if kind in ("image", "audio") else (
            "application/pdf" if kind == "pdf" else "text/plain"), name, size)
        self.pending.append((upload_id, item))
        while len(self.pending) > PENDING_MAX:
            files.remove(self.pending.pop(0)[1]["path"])
        log("gateway: received {} ({} bytes) as {}".format(name, size, upload_id))
        return _answer(200, {"id": upload_id, "name": name, "kind": kind, "size": size})

    async def _store(self, request, path, size):
        """The body into path, a piece at a time (microdot holds small bodies itself)."""
        with open(path, "wb") as f:
            if request.body:
                f.write(request.body)
                return
            left = size
            while left > 0:
                data = await asyncio.wait_for(request.stream.read(min(_PIECE, left)), READ_TIMEOUT_S)
                if not data:
                    raise OSError("the connection closed after {} of {} bytes".format(size - left, size))
                f.write(data)
                left -= len(data)

    def take(self, upload_id):
        for entry in self.pending:
            if entry[0] == upload_id:
                self.pending.remove(entry)
                return entry[1]
        return None
