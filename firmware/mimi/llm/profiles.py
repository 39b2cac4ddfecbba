# Model profiles: a name, a wire format, a base URL, a model, a key, a price and a context window; `claude` is
# llm_config's own, the others sit in llm_profiles' slots (p1.. for the line, k1.. for the key). Loaded by a board
# that uses one.
from mimi.platform import const

CLAUDE = "claude"  # the built-in profile: set_api_key, set_model, set_llm_api and llm_config.price
DEFAULT = "default"  # llm_for <job> default: the job follows the chain
ANTHROPIC, OPENAI = "anthropic", "openai"
WIRES = (ANTHROPIC, OPENAI)
JOBS = ("watcher", "summary", "heartbeat")  # llm_for's jobs: llm_config.for_<job>
SLOTS = const(6)  # profiles besides claude
NS = "llm_profiles"
_NAME_MAX = const(15)
_MICRO = const(1000000)
_ANTHROPIC_HOST = "api.anthropic.com"
_WINDOW_LEAST = const(1024)  # llm_ctx's least and most, in tokens
_WINDOW_MOST = const(2000000)
# A window this large (64k tokens, 256 KB) holds whatever the board sends (its files, history and tool results are
# bounded; a large PDF is the API's to judge): only a smaller one's requests are fitted (llm/window.py).
WINDOW_CHECKED_BELOW = const(65536)
_CLAUDE_WINDOW = const(200000)  # claude's, and an anthropic profile's unless llm_ctx says otherwise
_LAN_WINDOW = const(4096)  # an openai profile's on the LAN (Ollama, llama.cpp's server, LM Studio): a small model's
_CLOUD_WINDOW = const(128000)  # an openai profile's elsewhere (OpenAI, OpenRouter, Groq, DeepSeek...)


class Profile:
    """One profile as the clients use it: name, wire (anthropic or openai), url, model, key, price."""

    def __init__(self, config, name, wire, url, model, price=None, slot=None, ctx=None):
        self.config, self.name, self.wire, self.url, self.model = config, name, wire, url, model
        self.price = price  # (input, output) micro-USD per million tokens, or None: not set
        self.slot = slot  # its llm_profiles slot number; None for claude
        self.ctx = ctx  # its context window in tokens as llm_ctx gave it, or None: its kind's

    @property
    def key(self):  # read when a call is made: never kept in the profile
        if self.slot is None:
            return self.config.get("llm_config", "api_key")
        return self.config.get(NS, "k{}".format(self.slot))

    @property
    def window(self):
        """Its context window in tokens: llm_ctx's, else its kind's (every request fits it: llm/window.py)."""
        if self.ctx:
            return self.ctx
        if self.wire == ANTHROPIC:
            return _CLAUDE_WINDOW
        return _LAN_WINDOW if on_lan(self.url) else _CLOUD_WINDOW

    @property
    def anthropic_own(self):
        """Anthropic's own API behind it (claude, or an anthropic profile at the same base): Claude's server
        tools and the MCP connector may be offered."""
        if self.wire != ANTHROPIC:
            return False
        return self.slot is None or self.url.rstrip("/") == self.config.get("llm_config", "api_base").rstrip("/") \
            or host_of(self.url) == _ANTHROPIC_HOST

    @property
    def free(self):
        """Costs nothing: priced at 0, or an unpriced profile on a LAN address (claude: its list price)."""
        if self.price is not None:
            return self.price == (0, 0)
        return self.slot is not None and on_lan(self.url)

    def cost(self, counts, model=None):
        """Micro-USD of [input, output, cache read, cache write, ...] tokens of its model (or that one), or None
        when the price is unknown."""
        from mimi.safety import prices

        if self.price is not None or self.free:
            return prices.cost_at(self.price or (0, 0), counts)
        if self.wire == ANTHROPIC:
            return prices.cost_micro_usd(model or self.model, counts)
        return None


def key_cost(config, key, counts):
    """Micro-USD of a usage key's counts (a claude model, or "<profile> <model>": safety/budget.py), or None when
    unknown: the profile's own price (llm_price), else nothing for a profile on the LAN, else the list price."""
    name, _, model = key.partition(" ")
    if not model:
        name, model = CLAUDE, name
    profile = find(config, name)
    return None if profile is None else profile.cost(counts, model)


def check_name(name):
    """A profile name: 1 to 15 of a-z, 0-9, '-' and '_' (lowercased); ValueError otherwise."""
    name = name.strip().lower()
    if not name or len(name) > _NAME_MAX:  # not quoted: a key typed in its place must not be shown
        raise ValueError("a profile name is 1 to {} characters".format(_NAME_MAX))
    for ch in name:
        if not ("a" <= ch <= "z" or "0" <= ch <= "9" or ch in "-_"):
            raise ValueError("a profile name uses a-z, 0-9, '-' and '_' only: {!r}".format(name))
    return name


def check_names(text):
    """A chain: profile names, comma-separated, each once (order kept)."""
    names = []
    for part in text.split(","):
        name = check_name(part)
        if name not in names:
            names.append(name)
    return ",".join(names)


def parse_price(text):
    """'3/15' or '0.15/0.6' (USD per million tokens, input/output) -> (input, output) micro-USD per Mtok."""
    parts = text.strip().split("/")
    if len(parts) != 2:
        raise ValueError("a price is input/output in USD per million tokens, e.g. 3/15 or 0.15/0.6")
    return _micro(parts[0]), _micro(parts[1])


def _micro(text):
    whole, _, fraction = text.strip().partition(".")
    digits = whole + fraction
    if not digits or len(fraction) > 6 or not all("0" <= ch <= "9" for ch in digits):
        raise ValueError("a price is a number of USD like 3 or 0.15, not {!r}".format(text.strip()[:20]))
    return int(whole or "0") * _MICRO + int((fraction + "000000")[:6])


def price_text(price):
    """(input, output) micro-USD per Mtok -> '0.15/0.6'."""
    return "/".join(_usd(n) for n in price)


def _usd(micro):
    whole, fraction = divmod(micro, _MICRO)
    text = "{}.{:06d}".format(whole, fraction).rstrip("0")
    return text[:-1] if text.endswith(".") else text


def check_window(text):
    """A context window in tokens (llm_ctx): _WINDOW_LEAST to _WINDOW_MOST; ValueError otherwise."""
    tokens = int(text) if text.isdigit() else 0
    if not _WINDOW_LEAST <= tokens <= _WINDOW_MOST:
        raise ValueError("a window is {} to {} tokens".format(_WINDOW_LEAST, _WINDOW_MOST))
    return tokens


def extras(parts):
    """(price text or None, window text or None) of a line's fields after the model, in either order."""
    price = window = None
    for part in parts:
        if "/" in part and price is None:
            price = part
        elif part.isdigit() and window is None:
            window = part
        else:
            raise ValueError("after the model a profile takes a price in/out and a window in tokens, not {!r}"
                             .format(part[:20]))
    return price, window


def check_line(text):
    """A stored profile: 'name wire url model [in/out] [window]', checked and tidied (the llm_profiles.p*
    settings): the price as price_text writes it, then the window."""
    parts = text.split()
    if not 4 <= len(parts) <= 6:
        raise ValueError("a profile is: <name> <anthropic|openai> <url> <model> [price in/out] [window tokens]")
    name = check_name(parts[0])
    if name in (CLAUDE, DEFAULT):
        raise ValueError("'{}' is a built-in name; choose another".format(name))
    wire = parts[1].lower()
    if wire not in WIRES:  # not quoted: a key typed in its place must not be shown
        raise ValueError("the wire format is anthropic or openai")
    from mimi import url

    try:
        url.parse(parts[2])
    except ValueError as exc:
        raise ValueError("the URL {}, e.g. http://192.168.1.20:11434/v1".format(exc))
    parts[0], parts[1] = name, wire
    price, window = extras(parts[4:])
    parts = parts[:4] + ([price_text(parse_price(price))] if price else []) + (
        [str(check_window(window))] if window else [])
    return " ".join(parts)


def _from_line(config, text, slot):
    parts = text.split()
    price, window = extras(parts[4:])
    return Profile(config, parts[0], parts[1], parts[2], parts[3], parse_price(price) if price else None, slot,
                   int(window) if window else None)


def claude(config):
    price = config.get("llm_config", "price")
    return Profile(config, CLAUDE, ANTHROPIC, config.get("llm_config", "api_base"), config.get("llm_config", "model"),
                   parse_price(price) if price else None)


def slots(config):
    """[(slot, stored line)] of every profile besides claude, in slot order."""
    found = []
    for slot in range(1, SLOTS + 1):
        line = config.get(NS, "p{}".format(slot))
        if line:
            found.append((slot, line))
    return found


def find(config, name):
    """The profile of that name, or None."""
    if name == CLAUDE:
        return claude(config)
    for slot, line in slots(config):
        if line.split(None, 1)[0] == name:
            try:
                return _from_line(config, line, slot)
            except (ValueError, IndexError):  # a line set by hand and broken since: not usable
                return None
    return None


def every(config):
    """Every profile, claude first."""
    out = [claude(config)]
    for slot, line in slots(config):
        try:
            out.append(_from_line(config, line, slot))
        except (ValueError, IndexError):
            pass
    return out


def chain(config, job=None):
    """The profiles a call tries, first first: the job's own profile (llm_for) before the chain's. A name no
    profile has any more is left out; an empty result falls back to claude."""
    names = config.get("llm_config", "chain").split(",")
    if job is not None:
        own = config.get("llm_config", "for_" + job)
        if own:
            names = [own] + [name for name in names if name != own]
    out = []
    for name in names:
        profile = find(config, name.strip())
        if profile is not None:
            out.append(profile)
    return out or [claude(config)]


def host_of(url):
    """The host of a URL checked when it was saved (mimi/url.py parses it then): read at every call, so without
    loading the parser."""
    rest = url.split("://", 1)[-1]
    host = rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):  # an IPv6 address
        return host[1:].split("]", 1)[0].lower()
    return host.split(":", 1)[0].lower()


def on_lan(url):
    """Is the URL's host on the local network: a private, loopback or link-local address, localhost, a .local
    (mDNS), .lan or .home.arpa name, or a bare name without a dot."""
    host = host_of(url)
    if host in ("localhost", "::1") or host.endswith((".local", ".lan", ".home.arpa", ".localhost")):
        return True
    if ":" in host:  # IPv6: unique local fc00::/7, link-local fe80::/10
        return host.startswith(("fc", "fd", "fe8", "fe9", "fea", "feb"))
    parts = host.split(".")
    if len(parts) == 4 and all(part.isdigit() for part in parts):
        a, b = int(parts[0]), int(parts[1])
        return a in (10, 127) or (a == 172 and 16 <= b <= 31) or (a, b) in ((192, 168), (169, 254))
    return "." not in host and bool(host)
