# An MCP server's answer read as it streams in: every JSON string cut to a bound first (an image's base64, a long
# text never stands whole in the heap), then the body whole (JSON) or a line at a time (an SSE stream).
from mimi import utf8
from mimi.platform import const
from mimi.tools.registry import RESULT_MAX

ANSWER_MAX = const(48 * 1024)  # bytes of one answer (a JSON body, an SSE event) once its long strings are cut
STRING_MAX = RESULT_MAX  # bytes of one JSON string kept: a tool result's text is cut there anyway
_PIECE = const(1024)
_CUT_MARK = b"\xe2\x80\xa6[cut]"  # ends a string cut short ("…[cut]")


class Down(Exception):
    """The server could not be reached, or broke off: the text says why, for the owner and the model."""


class Cut:
    """Cuts each JSON string in a stream of bytes to STRING_MAX bytes, so a large answer (an image's base64, a
    long text) never stands whole in the heap; a cut string ends in "…[cut]". Its state spans the pieces."""

    def __init__(self, keep=STRING_MAX):
        self.keep = keep
        self.inside = False  # in a string
        self.kept = 0  # bytes of the current string kept
        self.full = False  # the current string was cut
        self.escape = b""  # an escape sequence not complete yet: kept whole or not at all

    def feed(self, data):
        out, i, n = [], 0, len(data)
        while i < n:
            if not self.inside:
                quote = data.find(b'"', i)
                if quote < 0:
                    out.append(data[i:])
                    break
                out.append(data[i : quote + 1])
                self.inside, self.kept, self.full, i = True, 0, False, quote + 1
            elif self.escape:
                self.escape += data[i : i + 1]
                i += 1
                if len(self.escape) == 6 or len(self.escape) == 2 and self.escape != b"\\u":
                    self._keep(out, self.escape)
                    self.escape = b""
            else:
                end, quote, slash = n, data.find(b'"', i), data.find(b"\\", i)
                if 0 <= quote < end:
                    end = quote
                if 0 <= slash < end:
                    end = slash
                if end > i:
                    self._keep(out, data[i:end])
                if end < n:
                    if data[end] == 0x22:  # the closing quote
                        out.append(b'"')
                        self.inside = False
                    else:
                        self.escape = b"\\"
                i = end + 1
        return b"".join(out)

    def _keep(self, out, piece):
        if self.full:
            return
        room = self.keep - self.kept
        if len(piece) <= room:
            out.append(piece)
            self.kept += len(piece)
            return
        if piece[:1] != b"\\":
            piece = piece[:room]
            out.append(piece[: utf8.boundary(piece)])
        out.append(_CUT_MARK)
        self.full = True


class Answer:
    """A response body read through Cut: whole (a JSON body) or a line at a time (an SSE stream)."""

    def __init__(self, response):
        self.response, self.cut, self.buf, self.size = response, Cut(), b"", 0

    async def _more(self):
        data = await self.response.read_some(_PIECE)
        if not data:
            return None
        data = self.cut.feed(data)
        self.size += len(data)
        return data

    async def whole(self):
        pieces = []
        while True:
            data = await self._more()
            if data is None:
                return b"".join(pieces)
            pieces.append(data)
            if self.size > ANSWER_MAX:
                raise Down("its answer is larger than {} KB".format(ANSWER_MAX // 1024))

    async def line(self):
        while True:
            at = self.buf.find(b"\n")
            if at >= 0:
                line, self.buf = self.buf[:at], self.buf[at + 1 :]
                return utf8.valid_text(line)
            if len(self.buf) > ANSWER_MAX:
                raise Down("one of its events is larger than {} KB".format(ANSWER_MAX // 1024))
            data = await self._more()
            if data is None:
                line, self.buf = self.buf, b""
                return utf8.valid_text(line) if line else None
            self.buf += data
