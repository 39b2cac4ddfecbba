# microdot's server with a deadline on reading each request and Nagle's algorithm off per connection.
import asyncio

from microdot import Microdot, Request, Response
from microdot.microdot import MUTED_SOCKET_ERRORS

from mimi import platform
from mimi.platform import const

REQUEST_TIMEOUT_S = const(10)  # a client that has not sent its whole request (handshake) by then is hung up on
# Bodies up to this are let through to their route: /upload streams photos and files to flash (the media
# limits top out at 5 MB); every other route reads at most Request.max_body_length (16 KB).
Request.max_content_length = 5 * 1024 * 1024 + 4096


class Web(Microdot):
    """microdot with a deadline on reading the request and Nagle's algorithm off per connection."""

    async def serve(self, reader, writer):
        """A connection the gateway's listener accepted (gateway/server.py), served as microdot's
        start_server serves one: CPython's StreamWriter gets the awrite and aclose microdot uses."""
        if not hasattr(writer, "awrite"):
            async def awrite(data):
                writer.write(data)
                await writer.drain()

            async def aclose():
                writer.close()
                await writer.wait_closed()

            writer.awrite, writer.aclose = awrite, aclose
        await self.handle_request(reader, writer)

    async def handle_request(self, reader, writer):
        # microdot's handle_request, but a silent or half-sent request no longer holds its
        # connection (and its memory) open for ever; other clients are served meanwhile.
        platform.tcp_nodelay(writer)
        request = None
        try:
            request = await asyncio.wait_for(
                Request.create(self, reader, writer, writer.get_extra_info("peername")),
                REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError:
            platform.log("gateway: a client sent no complete request within {} s; hung up".format(
                REQUEST_TIMEOUT_S))
            await _close_quietly(writer)
            return
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                platform.print_exception(exc)
        except Exception as exc:  # a malformed request line or header: answered with 400 below
            platform.log("gateway: answered 400 to a malformed request ({})".format(_malformed(exc)))
        response = await self.dispatch_request(request)
        try:
            if response != Response.already_handled:
                await response.write(writer)
            await writer.aclose()
        except OSError as exc:
            if exc.errno not in MUTED_SOCKET_ERRORS:
                raise


async def refuse(request, status, text, header):
    """Answer with a short plain-text error, written by hand: WebSocket clients want HTTP/1.1
    and microdot answers HTTP/1.0."""
    body = (text + "\n").encode()
    head = "HTTP/1.1 {}\r\n{}\r\nContent-Type: text/plain; charset=utf-8\r\n" \
        "Content-Length: {}\r\nConnection: close\r\n\r\n".format(status, header, len(body))
    await request.sock[1].awrite(head.encode() + body)
    return Response.already_handled


def _malformed(exc):
    """What was wrong with a request microdot could not read, in a few words."""
    if isinstance(exc, UnicodeError):  # before ValueError: a subclass of it on both runtimes
        return "bytes that are not UTF-8"
    if "too long" in str(exc):
        return "a request line or header over {} bytes".format(Request.max_readline)
    return "{}: {}".format(type(exc).__name__, str(exc)[:60])


async def _close_quietly(writer):
    try:
        await writer.aclose()
    except Exception:  # the peer is gone already
        pass
