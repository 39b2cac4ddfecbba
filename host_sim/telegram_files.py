# The fake Telegram's files: photos and documents users send, getFile, and the download URL, faults included.
import secrets
import struct
import zlib

from aiohttp import web

from host_sim.background_server import drop_connection
from host_sim.telegram_params import ApiError

DOWNLOAD_MAX = 20 * 1024 * 1024  # bots may download files up to 20 MB
PHOTO_SIDES = (90, 320, 800, 1280, 2560)  # the sizes Telegram makes of a photo (long side), smallest first


def jpeg_bytes(size, seed=b""):
    """A file of `size` bytes that starts and ends like a JPEG (the fake API checks the start)."""
    head = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    body = (seed or secrets.token_bytes(64)) * (size // 64 + 1)
    return head + body[: max(0, size - len(head) - 2)] + b"\xff\xd9"


def png_bytes(width=2, height=2):
    """A real, tiny PNG."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def pdf_bytes(text="Hello from a PDF", pad=0):
    """A small valid-looking PDF (the fake API checks %PDF-), padded to grow it."""
    body = ("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Count 0/Kids[]>>endobj\n"
            "% {}\n".format(text)).encode()
    return body + b"%" + b"x" * pad + b"\n%%EOF\n"


class Files:
    """file_id -> bytes and file_path; download faults scripted per next download."""

    def __init__(self):
        self._by_id = {}
        self._by_path = {}
        self._count = 0
        self.downloads = []  # {"path", "status", "sent"} per download request
        self._faults = []  # ("cut", after_bytes) or ("404",), taken by the next downloads

    def add(self, data, kind="photos", ext="jpg"):
        self._count += 1
        n = self._count
        file_id = "AgACAgIAAxkBAAI{}{}".format(n, secrets.token_hex(6))
        path = "{}/file_{}.{}".format(kind, n, ext)
        entry = {"file_id": file_id, "file_unique_id": "AQAD{}".format(n), "file_size": len(data),
                 "file_path": path, "data": data}
        self._by_id[file_id] = self._by_path[path] = entry
        return entry

    def photo_sizes(self, sizes):
        """PhotoSize objects (smallest first) for [(width, height, bytes)], each file stored."""
        out = []
        for width, height, data in sizes:
            entry = self.add(data)
            out.append({"file_id": entry["file_id"], "file_unique_id": entry["file_unique_id"],
                        "file_size": len(data), "width": width, "height": height})
        return out

    def get_file(self, args):
        """getFile: the File object, as the Bot API answers it."""
        entry = self._by_id.get(args.text("file_id"))
        if entry is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if entry["file_size"] > DOWNLOAD_MAX:
            raise ApiError(400, "Bad Request: file is too big")
        return {"file_id": entry["file_id"], "file_unique_id": entry["file_unique_id"],
                "file_size": entry["file_size"], "file_path": entry["file_path"]}

    def fault_next(self, *fault):
        self._faults.append(fault)

    async def serve(self, request, path):
        """GET <base>/file/bot<token>/<file_path>: the bytes, or the real server's 404."""
        fault = self._faults.pop(0) if self._faults else None
        entry = self._by_path.get(path)
        record = {"path": path, "status": None, "sent": 0}
        self.downloads.append(record)
        if entry is None or (fault and fault[0] == "404"):
            record["status"] = 404
            return web.json_response({"ok": False, "error_code": 404, "description": "Not Found"}, status=404)
        data = entry["data"]
        record["status"] = 200
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/octet-stream"})
        response.content_length = len(data)
        await response.prepare(request)
        limit = fault[1] if fault and fault[0] == "cut" else len(data)
        for at in range(0, limit, 16384):
            piece = data[at:min(at + 16384, limit)]
            await response.write(piece)
            record["sent"] += len(piece)
        if limit < len(data):  # cut: what was written leaves, then the connection drops
            await drop_connection(request)
            return response
        await response.write_eof()
        return response
