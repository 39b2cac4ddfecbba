# A small streaming HTTP/1.1 client on asyncio streams: TLS verified, bounded lines, every wait timed out.
import asyncio

from mimi import board, platform, utf8
from mimi.jsontext import Streamed
from mimi.net import connect, ntp, tls
from mimi.net.http_send import Batch
from mimi.platform import const

# Every wait of an exchange has a limit; none can hold the event loop's other tasks, and none is endless.
CONNECT_TIMEOUT_S = const(10)  # name lookup and TCP connect
TLS_HANDSHAKE_TIMEOUT_S = const(15)  # the TLS handshake (on MicroPython it happens with the first bytes sent)
FIRST_BYTE_TIMEOUT_S = const(60)  # request sent -> status line (a long poll passes its own, longer one)
READ_TIMEOUT_S = const(60)  # longest silence between two reads of a response (idle stream)
DEADLINE_S = const(120)  # the whole exchange, connect to last byte (a long stream passes its own)
_HEADER_LINE_MAX = const(2048)
_HEADERS_MAX = const(48)
LINE_MAX = const(16384)  # longest body line the line reader returns
_READ_CHUNK = const(512)


class HTTPError(OSError):
    """The exchange failed before a complete response: unreachable, TLS refused, timed out, malformed."""


class LineTooLong(HTTPError):
    pass


class TLSError(HTTPError):
    """The server's certificate was not trusted: retrying will not help."""


class NotSent(HTTPError):
    """The request never completely left the device (no connection, or it broke while sending): the server
    cannot have acted on it, so sending it again is safe even for calls that are not idempotent."""


class SessionBusy(NotSent):
    """Small-board mode: the one TLS session is in use and the caller chose not to wait (wait=False)."""


async def _timed(awaitable, seconds, what):
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except asyncio.TimeoutError:
        shown = int(seconds) if seconds == int(seconds) else round(seconds, 1)
        raise HTTPError("timed out {} after {} s".format(what, shown))


class Response:
    """Status and headers, then the body streamed through read_some/readline/read."""

    def __init__(self, reader, writer, host, read_timeout, deadline_ms, deadline_s=DEADLINE_S):
        self._reader = reader
        self._writer = writer
        self._host = host
        self._timeout = read_timeout
        self._deadline_ms = deadline_ms  # ticks_ms by which the whole exchange must be over
        self._deadline_s = deadline_s
        self._buf = b""  # raw bytes received and not yet consumed
        self._eof = False
        self._chunked = False
        self._remaining = -1  # body bytes left (Content-Length or current chunk); -1 unknown
        self._body_done = False
        self._line = b""  # decoded body bytes held by readline
        self.status = 0
        self.reason = ""
        self.headers = {}
        self.held = False  # this exchange holds small-board mode's one TLS session (net/tls_gate.py)
        self.sent = 0  # the request body's bytes (a model's usage estimated when its server reports none)

    async def _fill(self):
        if self._eof:
            return False
        try:
            data = await _timed(self._reader.read(_READ_CHUNK), self._wait_s(self._timeout),
                                "reading from " + self._host)
        except HTTPError:
            self._wait_s(0)  # the deadline cut the wait short: say so
            raise
        if not data:
            self._eof = True
            return False
        self._buf += data
        return True

    def _wait_s(self, limit_s):
        """limit_s, or less when the whole-exchange deadline comes first; HTTPError once it has passed."""
        left_ms = platform.ticks_diff(self._deadline_ms, platform.ticks_ms())
        if left_ms <= 0:
            raise HTTPError("{} took longer than the whole-request limit of {} s".format(self._host, self._deadline_s))
        return min(limit_s, left_ms / 1000)

    async def _raw_line(self, limit):
        while True:
            i = self._buf.find(b"\n")
            if i >= 0:
                line, self._buf = self._buf[:i], self._buf[i + 1 :]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._buf) > limit:
                raise LineTooLong("line from {} longer than {} bytes".format(self._host, limit))
            if not await self._fill():
                raise HTTPError("connection to {} closed mid-response".format(self._host))

    async def _read_head(self):
        status_line = await self._raw_line(_HEADER_LINE_MAX)
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise HTTPError("not an HTTP response from {}".format(self._host))
        try:
            self.status = int(parts[1])
        except ValueError:
            raise HTTPError("bad status line from {}".format(self._host))
        self.reason = utf8.valid_text(parts[2]) if len(parts) > 2 else ""
        while True:
            line = await self._raw_line(_HEADER_LINE_MAX)
            if not line:
                break
            if len(self.headers) >= _HEADERS_MAX:
                raise HTTPError("too many headers from {}".format(self._host))
            name, _, value = line.partition(b":")
            self.headers[utf8.valid_text(name.strip().lower())] = utf8.valid_text(value.strip())
        if self.status in (204, 304) or 100 <= self.status < 200:  # RFC 9112 6.3: no body, whatever the headers
            self._remaining, self._body_done = 0, True
        elif "chunked" in self.headers.get("transfer-encoding", "").lower():
            self._chunked = True
            self._remaining = 0
        elif "content-length" in self.headers:
            self._remaining = int(self.headers["content-length"])
            self._body_done = self._remaining == 0

    async def read_some(self, limit=_READ_CHUNK):
        """Up to `limit` decoded body bytes; b'' at the end of the body."""
        if self._line:  # bytes the line reader holds come first
            data, self._line = self._line[:limit], self._line[limit:]
            return data
        return await self._body_bytes(limit)

    async def save(self, path, max_bytes, piece, digest=None):
        """The body written to the file at path, `piece` bytes at a time (each fed to digest too): its size,
        or None once it passes max_bytes (the file then holds only a part; the caller says why)."""
        total = 0
        with open(path, "wb") as f:
            while True:
                data = await self.read_some(piece)
                if not data:
                    return total
                total += len(data)
                if total > max_bytes:
                    return None
                if digest is not None:
                    digest.update(data)
                f.write(data)

    async def _body_bytes(self, limit):
        if self._body_done:
            return b""
        if self._chunked and self._remaining == 0:
            size_line = await self._raw_line(_HEADER_LINE_MAX)
            try:
                self._remaining = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise HTTPError("bad chunk header from {}".format(self._host))
            if self._remaining == 0:
                await self._raw_line(_HEADER_LINE_MAX)  # the empty line after the last chunk
                self._body_done = True
                return b""
        if not self._buf and not await self._fill():
            if self._remaining < 0:  # body delimited by connection close
                self._body_done = True
                return b""
            raise HTTPError("connection to {} closed mid-body".format(self._host))
        take = len(self._buf) if self._remaining < 0 else min(len(self._buf), self._remaining)
        take = min(take, limit)
        data, self._buf = self._buf[:take], self._buf[take:]
        if self._remaining > 0:
            self._remaining -= take
            if self._remaining == 0:
                if self._chunked:
                    await self._raw_line(_HEADER_LINE_MAX)  # CRLF closing the chunk
                else:
                    self._body_done = True
        return data

    async def readline(self, limit=LINE_MAX):
        """The next body line as str (no line end), None at the end of the body.

        A long line is gathered as a list of pieces and joined once: growing one bytes object
        would copy it again for every piece and leave the heap in holes."""
        i = self._line.find(b"\n")
        if i < 0:
            pieces = [self._line] if self._line else []
            size, self._line = len(self._line), b""
            while True:
                if size > limit:
                    raise LineTooLong("line from {} longer than {} bytes".format(self._host, limit))
                data = await self._body_bytes(_READ_CHUNK)
                if not data:
                    return utf8.valid_text(b"".join(pieces)) if pieces else None
                i = data.find(b"\n")
                if i >= 0:
                    pieces.append(data[:i])
                    self._line = data[i + 1 :]
                    break
                pieces.append(data)
                size += len(data)
            line = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            del pieces
        else:
            line, self._line = self._line[:i], self._line[i + 1 :]
        return utf8.valid_text(line[:-1] if line.endswith(b"\r") else line)

    async def read(self, limit):
        """The whole body (at most `limit` bytes, else HTTPError)."""
        parts = []
        total = 0
        while True:
            data = await self.read_some()
            if not data:
                return b"".join(parts)
            total += len(data)
            if total > limit:
                raise HTTPError("response from {} larger than {} bytes".format(self._host, limit))
            parts.append(data)

    async def aclose(self):
        try:
            self._writer.close()
            await self._writer.wait_closed()
        except Exception:  # the peer may be gone already
            pass
        finally:
            if self.held:
                self.held = False
                _gate().release()


def split_url(url):
    """'https://host:port/path?q' -> (is_tls, host, port, '/path?q')."""
    if url.startswith("https://"):
        tls_on, rest, port = True, url[8:], 443
    elif url.startswith("http://"):
        tls_on, rest, port = False, url[7:], 80
    else:
        raise ValueError("URL must start with http:// or https://: {}".format(url))
    slash = rest.find("/")
    hostport, path = (rest, "/") if slash < 0 else (rest[:slash], rest[slash:])
    host = hostport
    if ":" in hostport:
        host, port_text = hostport.rsplit(":", 1)
        try:
            port = int(port_text)
        except ValueError:
            raise ValueError("bad port in URL: {}".format(url))
    if not host:
        raise ValueError("no host in URL: {}".format(url))
    return tls_on, host, port, path


def _gate():  # small-board mode's one TLS session (net/tls_gate.py): a roomy board never loads it
    from mimi.net.tls_gate import gate
    return gate


async def request(method, url, headers=None, body=None, read_timeout=READ_TIMEOUT_S, first_byte_s=None,
                  deadline_s=DEADLINE_S, give_way=None, wait=True):
    """One exchange (_exchange); in small-board mode a host that refuses the roots named for it (net/tls.py)
    is asked once more with every CA certificate: nothing was sent over the refused connection."""
    args = (method, url, headers, body, read_timeout, first_byte_s, deadline_s, give_way, wait)
    try:
        return await _exchange(*args)
    except TLSError:
        if not tls.widen(split_url(url)[1]):
            raise
    return await _exchange(*args)


async def _exchange(method, url, headers, body, read_timeout, first_byte_s, deadline_s, give_way, wait):
    """Send one request (Connection: close) and return the Response once its headers arrived.

    `body` is bytes or a list of bytes pieces (written one by one, never joined); a Streamed piece (a file on
    flash: jsontext.Streamed) is written chunk by chunk, its len() counted in the Content-Length. Limits: connect
    (+ TLS handshake), `first_byte_s` for the status line (default: read_timeout), `read_timeout` for each silence
    after it, `deadline_s` for the whole exchange including the body read later from the Response. Small-board
    mode: https holds the one TLS session until the Response closes (net/tls_gate.py: give_way, wait)."""
    tls_on, host, port, path = split_url(url)
    if tls_on and not ntp.synced():  # a 2000-01-01 clock makes every certificate look invalid
        raise HTTPError(ntp.NOT_SET_TEXT.format(host))
    if hasattr(body, "pieces"):  # encoded while written (llm/claude.py JsonBody): walked to count, then to send
        pieces = body.pieces
    else:
        listed = [] if body is None else ([body] if isinstance(body, (bytes, bytearray)) else body)

        def pieces():
            return listed
    length = 0
    for piece in pieces():
        length += len(piece)
    try:
        held = tls_on and board.small() and await _gate().take(give_way, wait)
    except OSError as exc:  # tls_gate.Busy
        raise SessionBusy(str(exc))
    deadline_ms = platform.ticks_add(platform.ticks_ms(), int(deadline_s * 1000))
    try:
        connecting = connect.open_stream(host, port, tls.context(host) if tls_on else None)
        limit = CONNECT_TIMEOUT_S + TLS_HANDSHAKE_TIMEOUT_S if tls_on else CONNECT_TIMEOUT_S
        reader, writer = await _timed(connecting, min(limit, deadline_s), "connecting to " + host)
    except BaseException as exc:
        if held:
            _gate().release()
        if isinstance(exc, HTTPError):
            raise NotSent(str(exc))
        if isinstance(exc, (OSError, ValueError)):
            raise _connect_error(exc, host, port)
        if isinstance(exc, MemoryError):  # the context or the handshake found no room: worth a later try
            raise NotSent("cannot reach {}:{} (not enough memory to connect)".format(host, port))
        raise
    response = Response(reader, writer, host, first_byte_s or read_timeout, deadline_ms, deadline_s)
    response.held, response.sent = held, length
    sending = TLS_HANDSHAKE_TIMEOUT_S + read_timeout if tls_on else read_timeout
    sent = False
    try:
        platform.tcp_nodelay(writer)  # a request written in pieces must not wait for delayed ACKs
        named = host if port == (443 if tls_on else 80) else "{}:{}".format(host, port)  # RFC 9110: with the port
        head = "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n".format(
            method, path, named, length
        )
        for name in headers or ():
            head += "{}: {}\r\n".format(name, headers[name])
        batch = Batch(writer, lambda: response._wait_s(sending), host, _timed)  # small pieces leave together
        await batch.add((head + "\r\n").encode())
        del head
        for piece in pieces():
            if isinstance(piece, Streamed):  # a file streamed from flash, a reply's pieces: never whole in RAM
                for chunk in piece.chunks():
                    await batch.add(chunk)
            else:
                await batch.add(piece)
        await batch.flush()
        sent = True
        await response._read_head()  # the first-byte limit
        response._timeout = read_timeout  # from here on: the idle limit
    except BaseException as exc:
        await response.aclose()
        if isinstance(exc, (OSError, ValueError)) and not isinstance(exc, HTTPError):
            raise _connect_error(exc, host, port, sent)  # MicroPython: TLS fails at first use
        if not sent and isinstance(exc, HTTPError) and not isinstance(exc, (TLSError, NotSent)):
            raise NotSent(str(exc))
        raise
    return response


def _connect_error(exc, host, port, sent=False):
    if connect.is_certificate_error(exc):
        return TLSError(connect.explain(exc, host))
    kind = HTTPError if sent else NotSent
    return kind("cannot reach {}:{} ({})".format(host, port, connect.explain(exc, host)))
