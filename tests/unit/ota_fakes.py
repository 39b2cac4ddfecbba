# Test doubles for the OTA tests: an HTTP response streaming a body, optionally cut mid-way.
from mimi.net.http import HTTPError, Response


class FakeResponse:
    """What mimi.net.http.request returns, over bytes in memory (the transport is faked, not the logic)."""

    def __init__(self, body, status=200, announce=True, cut_after=None, piece=700):
        self.status = status
        self.headers = {"content-length": str(len(body))} if announce else {}
        self.body = body
        self.cut_after = cut_after
        self.piece = piece
        self.pos = 0
        self.closed = False

    async def read_some(self, limit=512):
        if self.cut_after is not None and self.pos >= self.cut_after:
            raise HTTPError("connection to updates.example closed mid-body")
        end = min(self.pos + min(limit, self.piece), len(self.body))
        if self.cut_after is not None:
            end = min(end, self.cut_after)
        data, self.pos = self.body[self.pos : end], end
        return data

    save = Response.save  # the real body-to-file copy, over this fake's read_some

    async def read(self, limit):
        data = self.body[self.pos :]
        self.pos = len(self.body)
        if len(data) > limit:
            raise HTTPError("response larger than {} bytes".format(limit))
        return data

    async def aclose(self):
        self.closed = True


def sha256_hex(data):
    import binascii
    import hashlib

    return binascii.hexlify(hashlib.sha256(data).digest()).decode()


class PatternResponse(FakeResponse):
    """A long body never held whole: a first byte, then `size - 1` copies of one byte."""

    def __init__(self, first, fill, size):
        FakeResponse.__init__(self, b"", announce=False)
        self.headers = {"content-length": str(size)}
        self.first, self.fill, self.size = first, fill, size

    async def read_some(self, limit=512):
        n = min(limit, 4096, self.size - self.pos)
        data = (self.first + self.fill * (n - 1)) if self.pos == 0 and n else self.fill * n
        self.pos += n
        return data

    def sha256_hex(self):
        import binascii
        import hashlib

        digest = hashlib.sha256(self.first)
        chunk = self.fill * 4096
        left = self.size - 1
        while left:
            n = min(left, 4096)
            digest.update(chunk[:n])
            left -= n
        return binascii.hexlify(digest.digest()).decode()
