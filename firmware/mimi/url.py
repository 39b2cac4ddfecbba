# The URLs the board is given (a url setting, a model profile's, a speech service's, an MCP server's), parsed in one
# place, and the origin a key belongs to: its scheme, host and port. Loaded when one is checked or compared.
from mimi.platform import const

_PORT_MAX = const(65535)
_LABEL_MAX = const(63)
_NAME_MAX = const(253)
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_"
_HEX = "0123456789abcdef"
_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


def quote(text):
    """Percent-encode text for a URL's path segment or query value (UTF-8; only unreserved characters stay)."""
    out = []
    for byte in str(text).encode():
        ch = chr(byte)
        out.append(ch if ch in _UNRESERVED else "%{:02X}".format(byte))
    return "".join(out)


def parse(url):
    """(scheme, host, port, path) of an http or https URL: the host lowercased (an IPv6 literal without its
    brackets), the port the scheme's own when none is given, the path from its '/', '?' or '#' (maybe empty).
    ValueError says what is wrong and never quotes the URL: a key pasted into one must not be shown."""
    for ch in url:
        if ch <= " ":
            raise ValueError("must be one piece, without spaces")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise ValueError("must start with https:// or http://")
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if 0 <= at < end:
            end = at
    place, path = rest[:end], rest[end:]
    if "@" in place:  # user:password@host: a secret in a setting shown in clear
        raise ValueError("must not hold a user or password before its host (a key goes in its own setting)")
    if place.startswith("["):
        close = place.find("]")
        if close < 0:
            raise ValueError("opens an IPv6 address with [ and never closes it with ]")
        host, after = place[1:close].lower(), place[close + 1:]
        if not _ipv6(host):
            raise ValueError("has [...] around something that is not an IPv6 address")
    else:
        colon = place.find(":")
        host, after = (place, "") if colon < 0 else (place[:colon], place[colon:])
        host = host.lower()
        _check_name(host)
    if after and after[0] != ":":
        raise ValueError("has something other than :port after its host")
    port = 443 if scheme == "https" else 80
    if after:
        port = _port(after[1:])
    return scheme, host, port, path


def origin(url):
    """(scheme, host, port): what a key belongs to (the same host in another case, or with its default port given,
    is the same origin); None for a URL that is empty or does not parse."""
    try:
        return parse(url)[:3] if url else None
    except ValueError:
        return None


def _check_name(host):
    if not host:
        raise ValueError("names no host")
    dotted = True  # only digits and dots: an IPv4 address, checked as one
    for ch in host:
        if ch not in _NAME_CHARS and ch != ".":
            raise ValueError("has a host that is not a name, an IPv4 address or an IPv6 address in [ ]")
        dotted = dotted and (ch == "." or "0" <= ch <= "9")
    if dotted:
        if not _ipv4(host):
            raise ValueError("has a host that is not a valid IPv4 address")
        return
    labels = host.split(".")
    if len(host) > _NAME_MAX or not all(0 < len(label) <= _LABEL_MAX for label in labels):
        raise ValueError("has a host name with an empty or over-long part")


def _ipv4(text):
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not 0 < len(part) <= 3 or not part.isdigit() or int(part) > 255:
            return False
    return True


def _ipv6(text):
    """Eight groups of 1-4 hex digits (the last two may be an IPv4 address), or fewer around one '::'."""
    head, gap, tail = text.partition("::")
    groups = (head.split(":") if head else []) + (tail.split(":") if tail else [])
    if groups and "." in groups[-1]:
        if not _ipv4(groups.pop()):
            return False
        groups += ["0", "0"]
    for group in groups:
        if not 0 < len(group) <= 4 or not all(ch in _HEX for ch in group):
            return False
    return len(groups) < 8 if gap else len(groups) == 8


def _port(text):
    if not 0 < len(text) <= 5 or not text.isdigit() or not 0 < int(text) <= _PORT_MAX:
        raise ValueError("has a port that is not a number from 1 to {}".format(_PORT_MAX))
    return int(text)
