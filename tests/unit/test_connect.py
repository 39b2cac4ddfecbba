# net/connect.py, the edge net/http.py and mqtt/client.py share: a stream opened plain or TLS, and a failed
# connection in words (real loopback sockets; the errors a lookup or a certificate check raises, as each runtime
# raises them).
import asyncio
import os

from support import raises, run

from mimi.net import connect, tls


def _port():
    return 20000 + (os.urandom(2)[0] << 5) + os.urandom(1)[0] % 32


def test_a_refused_connection_is_explained():
    async def refused():
        reader, writer = await connect.open_stream("127.0.0.1", _port())  # MicroPython: raised at first use
        writer.write(b"ping")
        await writer.drain()
        await reader.read(16)

    exc = raises(OSError, run, refused())
    assert not connect.is_certificate_error(exc)
    assert connect.explain(exc, "127.0.0.1") == "connection refused"


def test_a_failed_name_lookup_is_explained():
    # The chip's lwIP, CPython's socket.gaierror, the unix port's text: a negative code each.
    for exc in (OSError(-202), OSError(-2, "Name or service not known"), OSError("[addrinfo error -2]")):
        assert not connect.is_certificate_error(exc)
        assert connect.explain(exc, "api.example") == "host name not found"
    assert connect.explain(OSError(113), "api.example") == "no route to host"
    assert connect.explain(OSError("odd failure "), "api.example") == "odd failure"
    assert connect.explain(OSError(), "api.example") == "OSError"


def test_an_untrusted_certificate_is_explained():
    on_micropython = ValueError("\nThe certificate is not correctly signed by the trusted CA\n")
    import ssl

    verify_error = getattr(ssl, "SSLCertVerificationError", OSError)  # CPython's, an OSError
    on_cpython = verify_error(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get "
                                 "local issuer certificate (_ssl.c:1006)")
    assert connect.is_certificate_error(on_micropython) and connect.is_certificate_error(on_cpython)
    assert connect.explain(on_micropython, "api.example") == (
        "the TLS certificate of api.example is not trusted (The certificate is not correctly signed by the "
        "trusted CA)")
    told = connect.explain(on_cpython, "api.example")
    assert told.startswith("the TLS certificate of api.example is not trusted (") and "VERIFY_FAILED" in told


def _first_bytes(context):
    """What a loopback server receives first from open_stream("localhost", port, context) writing b"ping"."""
    got = []

    async def handle(reader, writer):
        got.append(await reader.read(1024))
        writer.close()
        await writer.wait_closed()

    async def main():
        port = _port()
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        try:
            try:
                reader, writer = await connect.open_stream("localhost", port, context)
                writer.write(b"ping")  # MicroPython shakes hands here
                await writer.drain()
                await reader.read(16)
                writer.close()
            except Exception:  # the TLS handshake with a plain server fails, as it should
                pass
            for _ in range(200):
                if got:
                    break
                await asyncio.sleep(0.01)
        finally:
            server.close()
            await server.wait_closed()

    run(main())
    return got[0] if got else b""


def test_without_a_context_the_stream_is_plain_and_with_one_it_shakes_hands_for_the_host():
    assert _first_bytes(None) == b"ping"
    hello = _first_bytes(tls.context())
    assert hello[:2] == b"\x16\x03"  # a TLS handshake record: the ClientHello, not the bytes written
    assert b"localhost" in hello and b"ping" not in hello  # the server's name sent to be checked (SNI)
