# The streaming HTTP client against real loopback sockets (asyncio.start_server runs on both runtimes).
import asyncio
import os

from support import raises, run

from mimi.net import http


def _port():
    return 20000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


async def _serve(reply_chunks, port, delay=0.0, record=None):
    async def handle(reader, writer):
        head = b""
        while b"\r\n\r\n" not in head:
            data = await reader.read(256)
            if not data:
                break
            head += data
        if record is not None:
            record.append(head)
        text = head.decode()
        if "Content-Length: " in text:  # read the body too, as a real server does
            want = int(text.split("Content-Length: ")[1].split("\r\n")[0]) - len(head.split(b"\r\n\r\n", 1)[1])
            while want > 0:
                want -= len(await reader.read(want))
        for chunk in reply_chunks:
            writer.write(chunk)
            await writer.drain()
            if delay:
                await asyncio.sleep(delay)
        await writer.drain()
        writer.close()
        await writer.wait_closed()  # MicroPython closes the socket here, not in close()

    return await asyncio.start_server(handle, "127.0.0.1", port)


def _exchange(reply_chunks, fn, delay=0.0, record=None):
    async def main():
        port = _port()
        server = await _serve(reply_chunks, port, delay, record)
        try:
            return await fn("http://127.0.0.1:{}/v1/x?y=1".format(port))
        finally:
            server.close()
            await server.wait_closed()

    return run(main())


def test_split_url():
    assert http.split_url("https://api.anthropic.com/v1/messages") == (True, "api.anthropic.com", 443, "/v1/messages")
    assert http.split_url("http://127.0.0.1:8089") == (False, "127.0.0.1", 8089, "/")
    raises(ValueError, http.split_url, "ftp://x")
    raises(ValueError, http.split_url, "http://:80/")


def test_content_length_body_and_request_head():
    record = []

    async def fn(url):
        r = await http.request("POST", url, {"x-k": "v"}, [b'{"a":', b"1}"])
        return r.status, r.headers.get("content-type"), await r.read(100)

    reply = [b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"]
    assert _exchange(reply, fn, record=record) == (200, "text/plain", b"hello")
    head = record[0].decode()
    assert head.startswith("POST /v1/x?y=1 HTTP/1.1\r\n")
    assert "Content-Length: 7\r\n" in head and "x-k: v\r\n" in head


async def _all_lines(url):
    r = await http.request("GET", url)
    lines = []
    while True:
        line = await r.readline()
        if line is None:
            return lines
        lines.append(line)


def test_chunked_body_lines_split_across_chunks():
    body = [b"4\r\nab\nc\r\n", b"6\r\nd\r\nef\n\r\n", b"3\r\nghi\r\n0\r\n\r\n"]
    reply = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"] + body
    assert _exchange(reply, _all_lines, delay=0.01) == ["ab", "cd", "ef", "ghi"]


def test_lines_that_are_not_utf8_are_replaced_not_forwarded():
    body = "caf\u00e9 \U0001f355\n".encode() + b"bad \xff\xed\xa0\x80 end\n" + b"tail \xc3"
    reply = [b"HTTP/1.1 200 OK\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body]
    assert _exchange(reply, _all_lines) == ["caf\u00e9 \U0001f355", "bad \ufffd\ufffd\ufffd\ufffd end", "tail \ufffd"]


def test_a_long_line_across_many_reads_comes_whole():
    line = b"y" * 5000
    reply = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
             b"1388\r\n" + line + b"\r\n", b"3\r\n\r\nz\r\n0\r\n\r\n"]
    assert _exchange(reply, _all_lines, delay=0.01) == ["y" * 5000, "z"]


def test_line_over_cap_is_an_error_not_a_memory_blowup():
    async def fn(url):
        r = await http.request("GET", url)
        await r.readline(100)

    reply = [b"HTTP/1.1 200 OK\r\nContent-Length: 300\r\n\r\n" + b"x" * 300]
    exc = raises(http.LineTooLong, _exchange, reply, fn)
    assert "longer than 100 bytes" in str(exc)


def test_body_over_cap_is_refused():
    async def fn(url):
        r = await http.request("GET", url)
        await r.read(10)

    reply = [b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + b"y" * 20]
    assert "larger than 10 bytes" in str(raises(http.HTTPError, _exchange, reply, fn))


def test_connection_closed_mid_body_is_reported():
    async def fn(url):
        r = await http.request("GET", url)
        await r.read(100)

    reply = [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort"]
    assert "closed mid-body" in str(raises(http.HTTPError, _exchange, reply, fn))


def test_unreachable_host_is_a_clear_error():
    async def fn():
        await http.request("GET", "http://127.0.0.1:{}/".format(_port()))

    exc = raises(http.HTTPError, run, fn())
    assert "cannot reach 127.0.0.1" in str(exc) and "refused" in str(exc)


def test_silent_server_times_out():
    async def fn(url):
        await http.request("GET", url, read_timeout=0.3)

    reply = [b"", b"HTTP/1.1 200 OK\r\n\r\n"]
    assert "timed out" in str(raises(http.HTTPError, _exchange, reply, fn, delay=1.0))


def test_slow_first_byte_has_its_own_limit():
    async def fn(url):
        await http.request("GET", url, read_timeout=5, first_byte_s=0.3)

    reply = [b"", b"HTTP/1.1 200 OK\r\n\r\n"]
    assert "timed out reading from 127.0.0.1 after 0.3 s" in str(raises(http.HTTPError, _exchange, reply, fn, delay=1.0))


def test_a_trickling_response_is_cut_at_the_whole_request_deadline():
    # Each byte arrives well within the idle limit, but the body never ends: the deadline ends the exchange.
    got = []

    async def fn(url):
        response = await http.request("GET", url, read_timeout=5, deadline_s=0.8)
        while True:
            data = await response.read_some()
            if not data:
                return
            got.append(data)

    reply = [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"] + [b"x"] * 30
    exc = raises(http.HTTPError, _exchange, reply, fn, delay=0.1)
    assert "127.0.0.1 took longer than the whole-request limit of 0.8 s" in str(exc)
    assert 0 < len(b"".join(got)) < 30  # cut while the server was still trickling


def test_every_limit_is_a_named_constant():
    limits = (http.CONNECT_TIMEOUT_S, http.TLS_HANDSHAKE_TIMEOUT_S, http.FIRST_BYTE_TIMEOUT_S,
              http.READ_TIMEOUT_S, http.DEADLINE_S)
    assert all(isinstance(n, int) and n > 0 for n in limits)
    assert http.DEADLINE_S > http.CONNECT_TIMEOUT_S + http.TLS_HANDSHAKE_TIMEOUT_S
