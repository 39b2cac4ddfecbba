# Web chat attachments: POST /upload streams a photo or file to flash; an "attach" frame sends it to Claude.
# An upload is the connection's whose key it carried (?key=, from that connection's hello frame): its id (64 random
# bits) means nothing to another connection, and it goes when its connection does.
import asyncio
import binascii
import json
import os

from microdot import Response

from mimi.agent import attachments
from mimi.agent.attachments import Refused
from mimi.gateway import guard
from mimi.platform import const, log
from mimi.storage import files

_PENDING_MAX = const(4)  # uploads waiting for their message; the oldest is dropped past this
READ_TIMEOUT_S = const(10)  # silence while an upload streams in
_PIECE = const(1024)
_RUNNING_MAX = const(4)  # uploads streaming in at once, all clients together; past it: 503
_RUNNING_PER_CLIENT = const(2)  # ... and from one address
_ID_RANDOM_BYTES = const(8)  # an upload's id: up_<16 hex digits>
_NOT_KEYED = "upload key missing or unknown: an upload belongs to a web chat connection (send its hello frame's " \
    "upload_key as ?key=)"


def _answer(status, body):
    return Response(json.dumps(body), status, {"Content-Type": "application/json"})


class Uploads:
    deadline_s = 60  # an upload takes at most this long ...
    rate_floor = 32 * 1024  # ... or, a large one, as long as this many bytes a second need (5 MB: 160 s)

    def __init__(self, gateway):
        self.app = gateway.app
        self.gateway = gateway
        self.pending = []  # (id, the uploading connection's key, item), oldest first
        self.running = []  # the address of each upload streaming in now

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
        """POST /upload?key=<upload key>&name=<file name>, Content-Type the file's type, the bytes as the body (the
        gateway checked the token on the head: gateway/routes.py)."""
        sessions = self.gateway.sessions
        owner = sessions.keyed(request.args.get("key")) if sessions is not None else None
        if owner is None:  # before a byte of the body
            return _answer(403, {"error": _NOT_KEYED})
        address = guard.address(request)
        if len(self.running) >= _RUNNING_MAX or self.running.count(address) >= _RUNNING_PER_CLIENT:
            log("gateway: refused an upload: {} are streaming in already".format(len(self.running)))
            return Response(json.dumps({"error": "too many uploads at once (at most {} from one client, {} in all); "
                                        "try again when one has finished".format(_RUNNING_PER_CLIENT, _RUNNING_MAX)}),
                            503, {"Content-Type": "application/json", "Retry-After": "10", "Connection": "close"})
        self.running.append(address)
        try:
            return await self._receive(request, owner.upload_key)
        finally:
            self.running.remove(address)

    async def _receive(self, request, key):
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
        upload_id = "up_" + binascii.hexlify(os.urandom(_ID_RANDOM_BYTES)).decode()
        ext = "." + attachments.safe_name(name.rsplit(".", 1)[-1] if "." in name else "bin")[:8]
        path = attachments.inbox_path(self.app.flash.root, "ws_" + upload_id, ext)
        deadline = max(self.deadline_s, size // self.rate_floor)
        try:
            await asyncio.wait_for(self._store(request, path, size), deadline)
            if kind == "image":
                media_type = attachments.sniff_image(path)
                if media_type is None:
                    raise Refused("This image is not a JPEG, PNG, GIF or WebP file.")
        except Refused as exc:
            files.remove(path)
            return _answer(415, {"error": str(exc)})
        except asyncio.TimeoutError:
            files.remove(path)
            log("gateway: an upload took longer than {} s; dropped".format(deadline))
            return _answer(408, {"error": "the upload took too long; please try again on a faster connection"})
        except OSError as exc:
            files.remove(path)
            return _answer(400, {"error": "the upload broke off ({}); please try again".format(exc)})
        item = attachments.media(kind, path, media_type if kind in ("image", "audio") else (
            "application/pdf" if kind == "pdf" else "text/plain"), name, size)
        self.pending.append((upload_id, key, item))
        while len(self.pending) > _PENDING_MAX:
            files.remove(self.pending.pop(0)[2]["path"])
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
                try:
                    data = await asyncio.wait_for(request.stream.read(min(_PIECE, left)), READ_TIMEOUT_S)
                except asyncio.TimeoutError:  # silence, not the whole upload's deadline
                    raise OSError("nothing came for {} s".format(READ_TIMEOUT_S))
                if not data:
                    raise OSError("the connection closed after {} of {} bytes".format(size - left, size))
                f.write(data)
                left -= len(data)

    def take(self, upload_id, key):
        """The upload with this id that the connection of this key made (removed from those waiting), or None."""
        for entry in self.pending:
            if entry[0] == upload_id and entry[1] == key:
                self.pending.remove(entry)
                return entry[2]
        return None

    def forget(self, key):
        """A connection's uploads not yet sent, with their files: it has gone."""
        for entry in [entry for entry in self.pending if entry[1] == key]:
            self.pending.remove(entry)
            files.remove(entry[2]["path"])
