# The gateway's limits that take time or the inside of a request to see, on a real loopback socket under both
# runtimes: silent WebSocket clients pinged then dropped, an upload's overall deadline, a request head read
# through one buffer without losing what came with it, and files/inbox/ kept from MCP observers.
import asyncio
import json
import os

from mimi.tools import builtin_defs  # noqa: F401  its 12 KB constants made first: the unit heap is small
from stub_app import stub_app
from support import raises, remove_tree, run, write

_KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def _port():
    return 20000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


def _gateway(tag):
    from mimi.gateway.server import Gateway
    from mimi.storage.sessions import Sessions

    app = stub_app(tag)
    app.sessions = Sessions(app.flash.sessions_dir)
    app.gateway = Gateway(app)
    app.config.set("gw_config", "ws_port", str(_port()))
    return app


async def _listening(app):
    task = asyncio.create_task(app.gateway.run())
    while app.gateway.port is None:
        await asyncio.sleep(0.02)
    return task


async def _head(reader):
    """The response's head, read a line at a time."""
    lines = []
    while True:
        line = await reader.readline()
        if not line or line == b"\r\n":
            return b"".join(lines)
        lines.append(line)


async def _upgrade(app):
    token = app.config.get("gw_config", "ws_token")
    reader, writer = await asyncio.open_connection("127.0.0.1", app.gateway.port)
    writer.write("GET /ws?token={} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\n\r\n".format(token, _KEY).encode())
    await writer.drain()
    head = await _head(reader)
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


async def _frame(reader, wait):
    """(opcode, payload) of the server's next frame; None when the connection closes."""
    try:
        head = await asyncio.wait_for(reader.readexactly(2), wait)
    except EOFError:
        return None
    size = head[1] & 0x7F
    if size == 126:
        size = int.from_bytes(await reader.readexactly(2), "big")
    return head[0] & 0x0F, await reader.readexactly(size) if size else b""


def _masked(opcode, payload=b""):
    mask = os.urandom(4)
    return bytes((0x80 | opcode, 0x80 | len(payload))) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_a_silent_client_is_pinged_then_dropped_and_one_that_answers_stays():
    from mimi.gateway.clients import Clients

    app = _gateway("gw-silent")
    saved = Clients.ping_after_s, Clients.silence_max_s
    Clients.ping_after_s, Clients.silence_max_s = 0.5, 3  # a margin for a loaded machine: the live one pongs in time
    try:
        async def main():
            task = await _listening(app)
            quiet_reader, quiet_writer = await _upgrade(app)
            live_reader, live_writer = await _upgrade(app)
            assert (await _frame(quiet_reader, 5))[0] == 1 and (await _frame(live_reader, 5))[0] == 1  # hello
            assert len(app.gateway.sessions.clients) == 2
            pings, texts = [], []

            async def live():  # the live client answers each ping with a pong, as a browser does
                while True:
                    got = await _frame(live_reader, 30)
                    if got is None or got[0] == 8:
                        return
                    if got[0] == 9:
                        pings.append(got[1])
                        live_writer.write(_masked(10, got[1]))
                        await live_writer.drain()
                    elif got[0] == 1:
                        texts.append(got[1])

            answering = asyncio.create_task(live())
            for _ in range(200):
                if len(app.gateway.sessions.clients) < 2:
                    break
                await asyncio.sleep(0.1)
            seen = []
            while True:  # the quiet one never answers
                got = await _frame(quiet_reader, 5)
                if got is None or got[0] == 8:
                    break
                seen.append(got[0])
            assert 9 in seen  # it was pinged before it was dropped
            assert len(app.gateway.sessions.clients) == 1  # its place is free again; the live client stays
            assert pings
            live_writer.write(_masked(1, b'{"type": "history"}'))
            await live_writer.drain()
            for _ in range(50):
                if texts:
                    break
                await asyncio.sleep(0.1)
            assert b'"type": "history"' in texts[0]
            answering.cancel()
            for writer in (quiet_writer, live_writer):
                writer.close()
            app.gateway.server.close()
            await task

        run(main())
    finally:
        Clients.ping_after_s, Clients.silence_max_s = saved
        remove_tree(app.top)


def test_an_upload_that_trickles_in_past_its_deadline_is_dropped_with_its_file():
    from mimi.gateway.uploads import Uploads

    app = _gateway("gw-deadline")
    saved = Uploads.deadline_s
    Uploads.deadline_s = 1
    try:
        async def main():
            task = await _listening(app)
            token = app.config.get("gw_config", "ws_token")
            chat_reader, chat_writer = await _upgrade(app)  # the page's connection: its hello names the upload key
            key = json.loads((await _frame(chat_reader, 5))[1])["upload_key"]
            reader, writer = await asyncio.open_connection("127.0.0.1", app.gateway.port)
            writer.write("POST /upload?token={}&key={}&name=slow.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                         "text/plain\r\nContent-Length: 20000\r\n\r\n".format(token, key).encode())
            await writer.drain()
            # One read waits for the answer the whole time: a read cancelled by a short timeout as the answer
            # arrived could lose its first bytes (the status line), which a loaded machine showed.
            reading = asyncio.create_task(reader.read(512))
            for _ in range(30):  # a byte every 0.1 s: never silent long, never done
                if reading.done():
                    break
                try:
                    writer.write(b"x")
                    await writer.drain()
                except OSError:  # answered and closed meanwhile
                    break
                await asyncio.sleep(0.1)
            answer = await asyncio.wait_for(reading, 5)
            while b"too long" not in answer:  # the rest of the answer, then the close
                more = await asyncio.wait_for(reader.read(512), 5)
                if not more:
                    break
                answer += more
            assert b" 408 " in answer.split(b"\r\n")[0] and b"too long" in answer, answer
            inbox = app.flash.root + "/files/inbox"
            assert [name for name in os.listdir(inbox) if name.startswith("ws_up_")] == []
            assert app.gateway.uploads.running == []
            writer.close()
            chat_writer.close()
            app.gateway.server.close()
            await task

        run(main())
    finally:
        Uploads.deadline_s = saved
        remove_tree(app.top)


class _Reader:
    """A stream that delivers everything at once, as a client that sends its head and body in one packet (the
    pieces are joined as they are read: a large head is never one allocation)."""

    def __init__(self, *pieces):
        self.pieces = list(pieces)

    async def read(self, n=-1):
        out = b""
        while self.pieces and (n < 0 or len(out) < n):
            piece = self.pieces.pop(0)
            take = len(piece) if n < 0 else min(len(piece), n - len(out))
            out += piece[:take]
            if take < len(piece):
                self.pieces.insert(0, piece[take:])
        return out

    async def readinto(self, buf):
        data = await self.read(len(buf))
        buf[:len(data)] = data
        return len(data)

    async def readexactly(self, n):
        data = await self.read(n)
        if len(data) < n:
            raise EOFError()
        return data


def _request(reader):
    """The request and its body as the gateway makes them of what it read (Web.handle_request: the head, then
    the body once the head was let through)."""
    from microdot import Request

    from mimi.gateway.web import Replay, parsed_head, read_body, read_head

    head, length, rest = run(read_head(reader))
    replay = Replay(reader, length, rest)
    method, url, version, headers = parsed_head(head)
    body = run(read_body(replay, length)) if length else b""
    return Request(None, ("10.0.0.2", 5), method, url, version, headers, body=body, stream=replay,
                   sock=(replay, None))


def test_the_head_is_read_through_one_buffer_and_what_came_with_it_is_kept():
    from mimi.gateway.web import HeadTooLarge, Malformed, read_head

    body = b'{"x": "' + b"y" * 3000 + b'"}'
    data = b"POST /mcp?a=1 HTTP/1.1\r\nHost: board\r\nCookie: " + b"c" * 1500 + b"\r\nContent-Length: " + \
        str(len(body)).encode() + b"\r\nX-Unused: 1\r\n\r\n" + body + b"NEXT"
    request = _request(_Reader(data[:40], data[40:2000], data[2000:]))  # as the packets came
    assert (request.method, request.path, request.args["a"], request.body) == ("POST", "/mcp", "1", body)
    assert request.headers.get("Host") == "board" and request.headers.get("Cookie") is None  # not kept
    assert request.content_length == len(body) and request.client_addr == ("10.0.0.2", 5)
    frames = _masked(1, b"hi")  # a WebSocket client's first frame, in the packet of its handshake
    request = _request(_Reader(b"GET /ws HTTP/1.1\r\nHost: b\r\n\r\n" + frames))
    assert run(request.sock[0].readexactly(len(frames))) == frames
    two = _Reader(b"GET / HTTP/1.1\r\nHost: board\r\nhost: rebind.attacker.example\r\n\r\n")
    assert "two Host headers" in str(raises(Malformed, lambda: run(read_head(two))))
    start, long_line = b"GET / HTTP/1.1\r\n", b"X: " + b"z" * 1000 + b"\r\n"
    for head in ((start,) + (b"X: y\r\n",) * 49 + (b"\r\n",),  # 49 header lines
                 (start,) + (long_line,) * 9 + (b"\r\n",),  # 9 KB of headers
                 (start, b"Authorization: ", b"a" * 1900, b"\r\nOrigin: ", b"o" * 200, b"\r\n\r\n")):  # kept: 2 KB
        try:
            run(read_head(_Reader(*head)))
            raise AssertionError("read a head of {} pieces".format(len(head)))
        except HeadTooLarge:
            pass
    for head in (b"GET /\r\n\r\n", b"GET / HTTP/1.1\r\nHost\r\n\r\n", b"POST / HTTP/1.1\r\nContent-Length: -4\r\n\r\n",
                 b"GET / HTTP/1.1\r\nHost: b\xe9\r\n\r\n"):  # not a request line, no colon, a length below 0, Latin-1
        try:
            run(read_head(_Reader(head)))
            raise AssertionError("read {}".format(head))
        except HeadTooLarge:
            raise
        except ValueError:  # UnicodeError too: answered 400
            pass


class _Connection:
    """A client's connection as the gateway sees it: the head, then a body the gateway reads only if it asks; what
    it answers, and how many bytes of the request it had read by the first byte of its answer."""

    def __init__(self, head, body):
        self.pieces = [head, body]
        self.taken = 0
        self.taken_when_answered = None
        self.answer = b""

    async def readinto(self, buf):
        if not self.pieces:
            return 0
        piece = self.pieces[0]
        n = min(len(buf), len(piece))
        buf[:n] = piece[:n]
        if n == len(piece):
            self.pieces.pop(0)
        else:
            self.pieces[0] = piece[n:]
        self.taken += n
        return n

    async def read(self, n=-1):
        buf = bytearray(n if n > 0 else 4096)
        got = await self.readinto(buf)
        return bytes(buf[:got])

    async def readexactly(self, n):
        data = b""
        while len(data) < n:
            more = await self.read(n - len(data))
            if not more:
                raise EOFError()
            data += more
        return data

    async def awrite(self, data):
        if self.taken_when_answered is None:
            self.taken_when_answered = self.taken
        self.answer += data

    async def aclose(self):
        pass

    def get_extra_info(self, name):
        return ("10.0.0.2", 5) if name == "peername" else None


def test_a_request_is_refused_on_its_head_and_no_body_is_read_before_its_token():
    from mimi.gateway.routes import Routes

    app = _gateway("gw-body")
    try:
        web = Routes(app.gateway)
        token = app.config.get("gw_config", "ws_token")
        body = b"x" * 16384  # a body microdot would read whole (Request.max_body_length)
        refused = (("/upload?name=a.txt", "Host: 127.0.0.1\r\n", b"401"), ("/mcp", "Host: 127.0.0.1\r\n", b"401"),
                   ("/mcp", "Host: 127.0.0.1\r\nOrigin: http://evil.example\r\nAuthorization: Bearer " + token + "\r\n",
                    b"403"),
                   ("/upload?token=" + token, "Host: rebind.attacker.example\r\n", b"421"),
                   ("/upload?token=" + token, "Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n", b"400"),
                   ("/", "Host: 127.0.0.1\r\n", b"413"), ("/nowhere", "", b"413"))
        for path, headers, status in refused:
            head = "POST {} HTTP/1.1\r\n{}Content-Length: {}\r\n\r\n".format(path, headers, len(body)).encode()
            connection = _Connection(head, body)
            run(web.handle_request(connection, connection))
            assert connection.answer.split(b" ")[1] == status, (path, connection.answer[:200])
            assert connection.taken_when_answered == len(head), (path, connection.taken_when_answered)
        ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'  # with the token: the body is read and answered
        head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json" \
            "\r\nContent-Length: {}\r\n\r\n".format(token, len(ping)).encode()
        connection = _Connection(head, ping)
        run(web.handle_request(connection, connection))
        assert b"Missing session ID" in connection.answer and connection.taken_when_answered == len(head) + len(ping)
    finally:
        remove_tree(app.top)


def test_files_waiting_in_the_inbox_are_the_owner_s_even_over_mcp():
    from mimi.mcp.server_tools import Tools
    from mimi.storage.sessions import Sessions
    from mimi.tools.loading import load_builtins
    from mimi.tools.registry import Registry
    from mimi.safety import policy

    app = stub_app("mcp-inbox")
    try:
        app.sessions = Sessions(app.flash.sessions_dir)
        app.registry = Registry(app)
        load_builtins(app.registry)
        app.policy = policy.setup(app)
        inbox = app.flash.root + "/files/inbox"
        os.mkdir(app.flash.root + "/files")
        os.mkdir(inbox)
        write(inbox + "/ws_up_1.txt", "the owner's tax return")
        write(app.flash.root + "/files/shared.txt", "for everyone")
        tools = Tools(app)  # mcp_role observer, the default
        text, failed = run(tools.call({"name": "read_file", "arguments": {"path": "files/inbox/ws_up_1.txt"}}, "c"))
        assert failed and "only the owner" in text and "tax" not in text
        text, failed = run(tools.call({"name": "list_dir", "arguments": {"path": "files"}}, "c"))
        assert not failed and "shared.txt" in text and "inbox" not in text
        assert run(tools.call({"name": "list_dir", "arguments": {"path": "files/inbox"}}, "c"))[1]
        app.config.set("mcp_config", "role", "owner")  # the owner's choice: every MCP client is the owner
        text, failed = run(tools.call({"name": "read_file", "arguments": {"path": "files/inbox/ws_up_1.txt"}}, "c"))
        assert not failed and "tax return" in text, text
    finally:
        remove_tree(app.top)
