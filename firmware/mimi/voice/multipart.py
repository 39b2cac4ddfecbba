# A multipart/form-data body as pieces: text fields, then one file streamed from flash (never whole in RAM),
# its length known beforehand for the Content-Length.
import binascii
import os

from mimi.jsontext import Streamed
from mimi.platform import const
from mimi.storage import files

_PIECE = const(1024)  # bytes read from flash per step


class FilePart(Streamed):
    """A file's bytes read from flash while the request is sent; len() from its size."""

    def __init__(self, path):
        self.path = path
        self.size = files.size(path)
        if self.size < 0:
            raise OSError(2, "no such file: " + path)

    def __len__(self):
        return self.size

    def chunks(self):
        buf = bytearray(_PIECE)  # one buffer: each piece is copied out (http.py's batch) before the next read
        view = memoryview(buf)
        with open(self.path, "rb") as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    return
                yield view[:n]


def _quoted(value):
    return value.replace("\\", "_").replace('"', "_").replace("\r", " ").replace("\n", " ")


def body(fields, file_field, path, file_name, content_type):
    """(the Content-Type header, the body's pieces): fields [(name, text)], then the file part."""
    boundary = "mimi-" + binascii.hexlify(os.urandom(12)).decode()
    head = []
    for name, value in fields:
        head.append('--{}\r\nContent-Disposition: form-data; name="{}"\r\n\r\n{}\r\n'.format(boundary, name, value))
    head.append('--{}\r\nContent-Disposition: form-data; name="{}"; filename="{}"\r\nContent-Type: {}\r\n\r\n'
                .format(boundary, file_field, _quoted(file_name), content_type))
    pieces = ["".join(head).encode(), FilePart(path), "\r\n--{}--\r\n".format(boundary).encode()]
    return "multipart/form-data; boundary=" + boundary, pieces
