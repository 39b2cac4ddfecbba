# Request-body pieces read from flash while the request is sent: a file as base64, a text file as JSON.
import binascii
import json

from mimi import jsontext
from mimi.jsontext import Streamed
from mimi.platform import const
from mimi.storage import files

_B64_SLICE = const(1536)  # bytes read per step: a multiple of 3, so slices encode without padding
_TEXT_SLICE = const(1024)


class Base64File(Streamed):
    """A file as base64 text; len() is known from the file size (the Content-Length needs it)."""

    def __init__(self, path):
        self.path = path
        self.size = files.size(path)
        if self.size < 0:
            raise OSError(2, "no such file: " + path)

    def __len__(self):
        return 4 * ((self.size + 2) // 3)

    def chunks(self):
        buf = bytearray(_B64_SLICE)
        view = memoryview(buf)
        with open(self.path, "rb") as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    return
                yield binascii.b2a_base64(view[:n], newline=False)


class TextFile(Streamed):
    """A UTF-8 text file as the inside of a JSON string (escaped, bad bytes dropped), in slices."""

    def __init__(self, path):
        self.path = path  # its escaped length: one pass over the file at the first len(), nothing kept
        if files.size(path) < 0:
            raise OSError(2, "no such file: " + path)

    def chunks(self):
        carry = b""
        with open(self.path, "rb") as f:
            while True:
                data = f.read(_TEXT_SLICE)
                if not data:
                    break
                data = carry + data
                cut = files.utf8_boundary(data)
                carry, data = data[cut:], data[:cut]
                if data:
                    yield json.dumps(files.decode(data))[1:-1].encode()
        if carry:
            yield json.dumps(files.decode(carry))[1:-1].encode()


class TextPieces(Streamed):
    """str pieces sent as one JSON string, each escaped as it is written: the text is never joined
    (a long reply sent back after a tool round needs no hole of its size). Byte for byte the joined form."""

    def __init__(self, pieces):
        self.pieces = pieces

    def chunks(self):
        for piece in self.pieces:
            yield from jsontext.escaped(piece)

    def text(self):
        """The whole text (for inspection and tests; requests send the pieces)."""
        return "".join(self.pieces)
