# The network edge both clients share (net/http.py, mqtt/client.py): a stream to host:port, plain or verified
# TLS, and a failed connection in words.
import asyncio


def open_stream(host, port, context=None):
    """asyncio.open_connection to host:port (an awaitable of (reader, writer)): plain without a context, TLS
    with one (net/tls.py context(): the certificate checked against `host`). CPython shakes hands inside
    open_connection, MicroPython with the first bytes sent: a certificate failure can come from either."""
    if context is None:
        return asyncio.open_connection(host, port)
    return asyncio.open_connection(host, port, ssl=context, server_hostname=host)


def is_certificate_error(exc):
    """True when the server's certificate was refused: retrying will not help."""
    # MicroPython reports certificate failures as ValueError, CPython as ssl.SSLError (an OSError).
    return isinstance(exc, ValueError) or "CERTIFICATE" in str(exc).upper()


def explain(exc, host):
    """Why a connection to host failed or broke, in a few words: an untrusted certificate, the usual errno
    texts, a failed name lookup, else the exception's own text."""
    text = str(exc).strip()
    if is_certificate_error(exc):
        return "the TLS certificate of {} is not trusted ({})".format(host, text or type(exc).__name__)
    code = exc.args[0] if exc.args else None  # MicroPython's errno is args[0] too, a text for some errors
    if not isinstance(code, int):
        code = -1 if text.startswith("[addrinfo error") else None  # the unix port's failed name lookup
    if code == 104:
        return "connection reset"
    if code == 110:
        return "timed out"
    if code == 111:
        return "connection refused"
    if code == 113:
        return "no route to host"
    if code is not None and code < 0:  # getaddrinfo failures: CPython's socket.gaierror, lwIP's codes
        return "host name not found"
    return text or type(exc).__name__
