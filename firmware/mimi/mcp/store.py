# The MCP servers the board uses, kept in <data>/mcp.json: a name, a URL, a token (a secret: masked, never
# printed) and who calls it: the board's own client (local) or Anthropic's API itself (remote, the connector).
import json

from mimi.settings import looks_like_key, mask
from mimi.mcp import FILE_NAME  # the one name of the file; mcp.setup looks for it at boot
from mimi.platform import const
from mimi.storage import files, json_store

_SERVERS_MAX = const(8)
NAME_MAX = const(16)  # mcp__<name>__<tool> must stay within the API's 64 characters
_URL_MAX = const(300)
_TOKEN_MAX = const(4096)  # a Home Assistant long-lived token is about 180 characters, an OAuth JWT a few KB
FILE_MAX = const(48 * 1024)
_PRIVATE_HOSTS = ("localhost", "127.", "10.", "192.168.", "169.254.", "[::1]", "[fe80", "[fc", "[fd")


class StoreError(ValueError):
    """A server that cannot be added or found; the text is meant for the owner on the console."""


def check_name(name):
    """The name if it is 1-16 letters, digits, _ or - without "__" (it separates a tool's name parts)."""
    ok = 0 < len(name) <= NAME_MAX and "__" not in name
    for ch in name:
        ok = ok and ord(ch) < 128 and (ch.isalpha() or ch.isdigit() or ch in "_-")
    if not ok:
        raise StoreError("a server name is 1 to {} letters, digits, _ or - (no __), like home or ha"
                         .format(NAME_MAX))
    return name


def _host(address):
    """The URL's host (mimi/url.py), an IPv6 one in its brackets; ValueError for a URL that does not parse."""
    from mimi import url

    host = url.parse(address)[1]
    return "[" + host + "]" if ":" in host else host


def is_public(url):
    """False for a host Anthropic's servers cannot reach: a LAN address, this machine, a bare or .local name."""
    name = _host(url)
    if name.startswith("172.") and name.count(".") == 3:  # 172.16.0.0/12
        second = name.split(".")[1]
        return not (second.isdigit() and 16 <= int(second) <= 31)
    if name.endswith(".local") or name.endswith(".lan") or ("." not in name and not name.startswith("[")):
        return False
    for prefix in _PRIVATE_HOSTS:
        if name.startswith(prefix):
            return False
    return True


def check_url(url, remote):
    """The URL if the board's client (http or https) or Anthropic's API (public https only) can call it."""
    if len(url) > _URL_MAX:
        raise StoreError("give the server's URL, like http://192.168.1.10:8123/mcp_server/sse")
    try:
        _host(url)
    except ValueError as exc:  # what is wrong, the URL not quoted (a key pasted into it is not shown)
        raise StoreError("give the server's URL, like http://192.168.1.10:8123/mcp_server/sse (this one {})"
                         .format(exc))
    if looks_like_key(url):
        raise StoreError("the server's URL looks like it holds a key: not saved (it would be shown in clear; the "
                         "token goes last: mcp_add <name> <url> [token])")
    if remote and not url.startswith("https://"):
        raise StoreError("Claude's MCP connector needs an https:// URL (Anthropic's servers call it); for a "
                         "server on your network use mcp_add")
    if remote and not is_public(url):
        raise StoreError("Claude's MCP connector calls servers from the internet, and {} is not public; for a "
                         "server on your network use mcp_add".format(_host(url)))
    return url


def _origin_moved(before, after):
    """Does a server's URL go to another scheme, host or port (its token stays with the old one)?"""
    from mimi import url

    return url.origin(before) != url.origin(after)


def _valid(server):
    return (isinstance(server, dict) and isinstance(server.get("name"), str) and isinstance(server.get("url"), str)
            and isinstance(server.get("token", ""), str) and isinstance(server.get("remote", False), bool))


def describe(server, tools=None):
    """One line for mcp_list, the token masked: 'home  http://...  token ****  3 tools'."""
    if server.get("remote"):
        who = "Claude's MCP connector (Anthropic's API calls it)"
    else:
        who = "{} tools".format(tools) if tools is not None else "tools not fetched yet"
    return "{}  {}  token {}  {}".format(server["name"], server["url"], mask(server.get("token")), who)


class Store:
    """The server list in memory, written atomically on every change; no server, no file (mcp.setup's check)."""

    def __init__(self, data_root):
        self.path = files.join(data_root, FILE_NAME)
        self.servers = []
        self.load()

    def load(self):
        """Read mcp.json; a missing file is no server, a broken one is named on the console and kept aside."""
        data = json_store.read(self.path, FILE_MAX, "servers")
        self.servers = [server for server in data["servers"] if _valid(server)][:_SERVERS_MAX] if data else []

    def save(self):
        if not self.servers:
            files.remove(self.path)
            return
        files.write_atomic(self.path, json.dumps({"servers": self.servers}))

    def get(self, name):
        for server in self.servers:
            if server["name"] == name:
                return server
        return None

    def local(self):
        return [server for server in self.servers if not server.get("remote")]

    def remote(self):
        return [server for server in self.servers if server.get("remote")]

    def add(self, name, url, token=None, remote=False):
        """Add or replace a server (saved): (the server, True when it replaced one of that name, why the token of
        the one it replaced stayed behind or ""). A server given again without a token keeps its token while its
        URL keeps its scheme, host and port and the same side calls it (the board, or Anthropic's API)."""
        check_name(name)
        check_url(url, remote)
        if token is not None and len(token) > _TOKEN_MAX:
            raise StoreError("the token is longer than {} characters".format(_TOKEN_MAX))
        old = self.get(name)
        if old is None and len(self.servers) >= _SERVERS_MAX:
            raise StoreError("the board keeps at most {} MCP servers (mcp_remove one first)".format(_SERVERS_MAX))
        server = {"name": name, "url": url, "remote": remote}
        held = old.get("token") if old is not None and not token else None
        dropped = ""
        if held and old.get("remote", False) != remote:  # a token for the board is not Anthropic's, nor the reverse
            dropped = "another side calls it"
        elif held and _origin_moved(old["url"], url):
            dropped = "the host changed"
        token = token or (None if dropped else held)
        if token:
            server["token"] = token
        self.servers = [s for s in self.servers if s["name"] != name] + [server]
        self.save()
        return server, old is not None, dropped

    def remove(self, name):
        """Forget a server (saved): it, or StoreError when there is none of that name."""
        server = self.get(name)
        if server is None:
            raise StoreError("no MCP server named '{}' (mcp_list shows them)".format(name))
        self.servers = [s for s in self.servers if s["name"] != name]
        self.save()
        return server
