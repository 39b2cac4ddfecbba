# Who may talk to the gateway (imported with the routes, at the first connection): the names the board answers
# to (Host: a foreign name is DNS rebinding), the web pages that may use the web chat and /mcp (Origin), and the
# role a web chat client acts with (ws_role with the token, ws_open_role while it is off).
from mimi.gateway import auth
from mimi.platform import const
from mimi.safety import roles

NS = "gw_config"
MCP_NS = "mcp_config"  # mimi.mcp.NS (that package's boot part is let go after boot): /mcp's token is checked here
MCP_TOKEN_WRONG = "token missing or wrong: send 'Authorization: Bearer <token>' (the console's ws_token shows it, " \
    "or set_mcp_token sets one for MCP)"
_LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
_IPV6_GROUPS = const(8)  # 16-bit groups of an IPv6 address; an IPv4 tail stands for the last two
_IPV6_GROUP_DIGITS = const(4)
_HEX = "0123456789abcdef"


def _name(host):
    """The name part of a Host value or an origin's host: lower case, no port, no trailing dot ("" when it is not
    a name and port)."""
    host = host.strip().lower()
    if host.startswith("["):  # an IPv6 literal, its port after the bracket and nothing else
        end = host.find("]")
        port = host[end + 1:]
        if end < 0 or (port and not (port[0] == ":" and port[1:].isdigit())):
            return ""
        return host[:end + 1]
    return host.rsplit(":", 1)[0].rstrip(".")


def _is_ipv4(name):
    parts = name.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part or len(part) > 3 or not part.isdigit() or int(part) > 255:
            return False
    return True


def _is_ipv6(text):
    """Hex groups of 1..4 digits, one "::" at most standing for one or more zero groups, maybe an IPv4 tail."""
    head, gap, tail = text.partition("::")
    if "::" in tail:
        return False
    groups = (head.split(":") if head else []) + (tail.split(":") if tail else [])
    wanted = _IPV6_GROUPS
    if groups and "." in groups[-1]:
        if not _is_ipv4(groups.pop()):
            return False
        wanted -= 2
    for group in groups:
        if not 0 < len(group) <= _IPV6_GROUP_DIGITS:
            return False
        for ch in group:
            if ch not in _HEX:
                return False
    return len(groups) < wanted if gap else len(groups) == wanted


def _is_ip(name):
    """An IPv4 or IPv6 literal: a browser that sent it reached that address itself, no name was resolved."""
    if name.startswith("[") and name.endswith("]"):
        return _is_ipv6(name[1:-1])
    return _is_ipv4(name)


def address(request):
    """The client's IP address as text ("unknown" when the stream does not say): a tuple on the chip and
    CPython, the raw sockaddr (family, port, address) on the unix port."""
    peer = request.client_addr
    if isinstance(peer, tuple) and peer:
        return str(peer[0])
    if isinstance(peer, (bytes, bytearray)) and len(peer) >= 8:
        if peer[0] == 2:  # AF_INET
            return "{}.{}.{}.{}".format(peer[4], peer[5], peer[6], peer[7])
        if len(peer) >= 24:  # AF_INET6: the address's 16 bytes after family, port and flow info
            return ":".join("{:02x}{:02x}".format(peer[i], peer[i + 1]) for i in range(8, 24, 2))
    return "unknown"


def listed(config, key):
    """The comma-separated list gw_config.<key>, lower case, without blanks."""
    return [item.strip().lower().rstrip("/") for item in config.get(NS, key).split(",") if item.strip()]


def hostname():
    """The board's network name (DHCP and mDNS: <hostname>.local), or None where the port has none."""
    try:
        import network

        return network.hostname().lower()
    except (AttributeError, OSError, TypeError):
        return None


def host_allowed(config, headers):
    """A request without Host (not a browser), an address literal, localhost, the board's own name (with
    .local) or one of gw_config.hosts; any other name is a page of another site that had its name point here."""
    host = headers.get("Host")
    if not host:
        return True
    name = _name(host)
    if _is_ip(name) or name == "localhost":
        return True
    own = hostname()
    if own and name in (own, own + ".local"):
        return True
    return name in listed(config, "hosts")


def origin_allowed(config, headers, loopback_pages=False):
    """No Origin (not a browser), the board's own page (its origin is the Host the browser asked, checked by
    host_allowed), one of gw_config.origins, or (loopback_pages: /mcp) a page on the client's own machine."""
    origin = headers.get("Origin")
    if not origin:
        return True
    origin = origin.strip().lower().rstrip("/")
    scheme, sep, place = origin.partition("://")
    host = (headers.get("Host") or "").strip().lower()
    if sep and scheme in ("http", "https") and host and place == host:
        return True
    if origin in listed(config, "origins"):
        return True
    return loopback_pages and sep and _name(place) in _LOOPBACK


def mcp_token(config):
    """The token /mcp takes: mcp_config.token, else the web chat's (auth.OFF: none needed)."""
    return config.get(MCP_NS, "token") or auth.current(config)


def role(config, key):
    """The role gw_config.<key> names; an unknown stored value is the least trusted role."""
    found = config.get(NS, key)
    return found if found in roles.ROLES else roles.OBSERVER


def client_role(config, request):
    """The role a web chat client acts with: ws_role when it presents the token, ws_open_role while the token is
    off; None: refused (no token, or a wrong one)."""
    token = auth.current(config)
    if token == auth.OFF:
        return role(config, "ws_open_role")
    given = auth.presented(request)
    if given is None or not auth.same(given, token):
        return None
    return role(config, "ws_role")

