# Text over HTTP for the web tools: URL quoting and joining, charset decoding, bounded JSON requests.
import json

from mimi import VERSION, jsontext, utf8
from mimi.net import http
from mimi.platform import const
from mimi.url import quote

_JSON_MAX = const(65536)  # bytes of one API answer (search results, forecast)
READ_TIMEOUT_S = const(20)
USER_AGENT = "MimiClaw-Py/{} (ESP32 assistant)".format(VERSION)
_LATIN1 = ("iso-8859-1", "latin-1", "latin1", "windows-1252", "cp1252", "us-ascii", "ascii")


class ServiceError(Exception):
    """The request failed before an answer (unreachable, TLS, timeout, too big, not JSON): clear text."""


def query(params):
    """[(name, value), ...] -> 'a=1&b=x%20y' in the given order."""
    return "&".join(name + "=" + quote(value) for name, value in params)


def clean_url(url):
    """The URL as sent: no #fragment, spaces encoded; ValueError unless http(s)."""
    url = url.strip()
    hash_at = url.find("#")
    if hash_at >= 0:
        url = url[:hash_at]
    url = url.replace(" ", "%20")
    http.split_url(url)  # raises ValueError with a clear message
    return url


def resolve(base, location):
    """Where a redirect's Location points, made absolute against the URL that answered."""
    location = location.strip()
    colon = location.find(":")
    if colon > 0 and location[:colon].isalpha():
        return location  # absolute (http, https, or a scheme the caller refuses)
    scheme_end = base.find("://") + 3
    if location.startswith("//"):
        return base[: scheme_end - 2] + location
    path_at = base.find("/", scheme_end)
    origin = base if path_at < 0 else base[:path_at]
    if location.startswith("/"):
        return origin + location
    path = "/" if path_at < 0 else base[path_at:]
    for stop in "?#":
        if stop in path:
            path = path[: path.find(stop)]
    if location.startswith("?"):
        return origin + path + location
    return origin + path[: path.rfind("/") + 1] + location


def media_type(content_type):
    """'Text/HTML; charset=UTF-8' -> ('text/html', 'utf-8'); charset '' when not given."""
    parts = content_type.split(";")
    charset = ""
    for part in parts[1:]:
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'").lower()
    return parts[0].strip().lower(), charset


class Decoder:
    """Bytes pieces -> str pieces for a charset; a character split between pieces is kept whole."""

    def __init__(self, charset=""):
        self.latin1 = charset in _LATIN1
        self._tail = b""

    def decode(self, data, final=False):
        if self.latin1:
            return "".join(chr(byte) for byte in data)
        data = self._tail + data if self._tail else data
        cut = len(data) if final else utf8.boundary(data)
        self._tail = data[cut:]
        return utf8.valid_text(data[:cut])


def service_error(exc):
    """A ServiceError from an HTTP client failure, keeping its (already user-readable) text."""
    if isinstance(exc, ServiceError):
        return exc
    return ServiceError(str(exc) or exc.__class__.__name__)


async def request_json(method, url, headers=None, body=None, limit=_JSON_MAX):
    """(status, parsed JSON or None, raw text head) of one request; ServiceError when it failed."""
    sent = {"User-Agent": USER_AGENT, "Accept": "application/json", "Accept-Encoding": "identity"}
    for name in headers or ():
        sent[name] = headers[name]
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    try:
        resp = await http.request(method, url, sent, body, READ_TIMEOUT_S)
        try:
            raw = await resp.read(limit)
        finally:
            await resp.aclose()
    except (OSError, ValueError) as exc:  # http.HTTPError and TLSError are OSErrors
        raise service_error(exc)
    text = utf8.valid_text(raw)
    try:
        data = jsontext.loads(text)
    except ValueError:
        data = None
    return resp.status, data, text[:200]
