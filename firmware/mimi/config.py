# Device settings in NVS: defaults, validation, in-memory overrides, masking, change notices.
from mimi import platform
from mimi.platform import const

VALUE_MAX = const(512)  # bytes of one stored value (UTF-8)
_MASK_SHOW_FROM = const(24)  # a secret this long or longer shows its first and last 4 characters
_MASK_EDGE = const(4)

SECRET = const(1)  # shown masked, never put into messages
PASSWORD = const(3)  # a secret never shown even in part (includes the SECRET bit)

# Kinds of value
TEXT = "text"
URL = "url"
IDS = "ids"  # comma-separated decimal user ids
INT = "int"

_NOT_SET = "(not set)"
_HIDDEN_SHORT = "****"
_HIDDEN_PASSWORD = "********"

# The single source of truth: (namespace, key, kind, default, flags, low, high, description).
# low/high bound INT values; they are None for the other kinds.
SETTINGS = (
    ("wifi_config", "ssid", TEXT, "", 0, None, None, "WiFi network name"),
    ("wifi_config", "password", TEXT, "", PASSWORD, None, None, "WiFi password"),
    ("wifi_config", "setup_port", INT, 80, 0, 1, 65535,
     "TCP port of the setup page on the MimiClaw-XXXX access point"),
    ("tg_config", "bot_token", TEXT, "", SECRET, None, None, "Telegram bot token from @BotFather"),
    ("tg_config", "api_base", URL, "https://api.telegram.org", 0, None, None,
     "Telegram Bot API base URL"),
    ("tg_config", "allowlist", IDS, "", 0, None, None,
     "Telegram user ids allowed to chat, comma-separated"),
    ("llm_config", "api_key", TEXT, "", SECRET, None, None, "Anthropic API key"),
    ("llm_config", "model", TEXT, "claude-sonnet-4-5", 0, None, None, "Claude model name"),
    ("llm_config", "api_base", URL, "https://api.anthropic.com", 0, None, None,
     "Anthropic API base URL"),
    ("llm_config", "max_tokens", INT, 4096, 0, 1, 64000, "Most tokens in one reply"),
    ("gw_config", "ws_port", INT, 18789, 0, 1, 65535, "WebSocket gateway TCP port"),
    ("agent_config", "heartbeat_s", INT, 1800, 0, 0, 86400,
     "Seconds between heartbeat checks of HEARTBEAT.md (0 = off, at least 60)"),
    ("tool_config", "gpio_allow", IDS, "", 0, None, None,
     "GPIO pins the agent may read and write, comma-separated (gpio_allow <pin>)"),
    ("web_config", "search_key", TEXT, "", SECRET, None, None,
     "Web search API key, Brave Search or Tavily (set_search_key <key>)"),
    ("web_config", "search_provider", TEXT, "brave", 0, None, None, "Web search provider: brave or tavily"),
    ("web_config", "search_api", URL, "", 0, None, None,
     "Web search endpoint URL; empty: the provider's own"),
    ("web_config", "search_mode", TEXT, "", 0, None, None,
     "Who searches the web: server (Claude's own), device (web_search with your key) or off; "
     "empty: device when a search key is set, else server (set_search)"),
    ("web_config", "search_max_uses", INT, 3, 0, 1, 10, "Searches (and fetches) Claude may run per request, server mode"),
    ("web_config", "server_fetch", INT, 0, 0, 0, 1, "1: Claude's own web_fetch (beta) instead of the device's, server mode"),
    ("safety_config", "day_searches", INT, 100, 0, 0, 100000,
     "Claude's server web searches per day (0 = no limit); past it, requests offer no web search"),
    ("media_config", "photo_max_bytes", INT, 204800, 0, 10240, 5242880,
     "Largest photo size (bytes) taken from Telegram; a smaller size of the photo is picked to fit"),
    ("media_config", "photo_max_px", INT, 1568, 0, 200, 8000, "Longest side (pixels) of a photo sent to Claude"),
    ("media_config", "file_max_bytes", INT, 1048576, 0, 1024, 5242880, "Largest PDF or text file sent to Claude"),
    ("web_config", "weather_api", URL, "https://api.open-meteo.com", 0, None, None,
     "Open-Meteo forecast API base URL"),
    ("web_config", "geocode_api", URL, "https://geocoding-api.open-meteo.com", 0, None, None,
     "Open-Meteo geocoding API base URL"),
    ("gw_config", "ws_token", TEXT, "", SECRET, None, None,
     "Token a WebSocket client must present"),
    ("safety_config", "calls", INT, 3, 0, 1, 1000, "Identical acting tool calls allowed per window"),
    ("safety_config", "window_s", INT, 600, 0, 1, 86400, "Seconds in which repeated identical calls are counted"),
    ("safety_config", "quiet_s", INT, 1800, 0, 1, 86400, "Quiet seconds after which an open circuit breaker closes"),
    ("tg_config", "roles", TEXT, "", 0, None, None,
     "Roles of allowlisted Telegram users: id=owner|operator|observer, comma-separated (tg_allow <id> <role>)"),
    ("tool_config", "policy", TEXT, "", 0, None, None,
     "Autonomy levels changed from their defaults: tool=autonomous|report|confirm|blocked (tool_policy)"),
    ("safety_config", "confirm_s", INT, 120, 0, 5, 3600,
     "Seconds a confirmation question waits for Approve before it counts as Deny"),
    ("safety_config", "user_per_min", INT, 10, 0, 1, 1000, "Messages one user may send per minute"),
    ("safety_config", "llm_per_hour", INT, 200, 0, 1, 100000, "LLM calls the device may make per hour"),
    ("safety_config", "day_tokens", INT, 2000000, 0, 0, 1000000000,
     "Tokens the device may use per day, all kinds counted (0 = no limit)"),
    ("llm_config", "watch_model", TEXT, "", 0, None, None,
     "Model that judges watcher readings (set_watch_model); empty: the main model"),
    ("safety_config", "watch_evals_min", INT, 6, 0, 1, 600, "Watcher evaluations allowed per minute, all watchers"),
    ("safety_config", "watch_acts_hour", INT, 10, 0, 1, 1000,
     "Watcher actions (tool calls and notices) allowed per hour, all watchers"),
    ("mqtt_config", "host", TEXT, "", 0, None, None, "MQTT broker host name or IP; empty: MQTT off (mqtt_set)"),
    ("mqtt_config", "port", INT, 0, 0, 0, 65535, "MQTT broker port; 0: 1883, or 8883 with TLS"),
    ("mqtt_config", "user", TEXT, "", 0, None, None, "MQTT user name (mqtt_auth)"),
    ("mqtt_config", "password", TEXT, "", PASSWORD, None, None, "MQTT password (mqtt_auth)"),
    ("mqtt_config", "tls", INT, 0, 0, 0, 1, "1: MQTT over TLS, the broker's certificate checked (mqtt_tls)"),
    ("mqtt_config", "device_id", TEXT, "", 0, None, None,
     "This board's name on MQTT (topics mimi/<id>/...); empty: mimi-<chip id> (mqtt_id)"),
    ("mqtt_config", "role", TEXT, "observer", 0, None, None,
     "Role of messages arriving on MQTT: observer, operator or owner (mqtt_role)"),
    ("mqtt_config", "discovery", INT, 1, 0, 0, 1, "1: announce the board to Home Assistant (mqtt_discovery)"),
    ("mqtt_config", "ha_prefix", TEXT, "homeassistant", 0, None, None, "Home Assistant's discovery prefix"),
    ("mqtt_config", "publish_allow", TEXT, "", 0, None, None,
     "Topics (filters with + and #) the mqtt_publish tool may publish to, comma-separated (mqtt_allow)"),
    ("mqtt_config", "keepalive", INT, 60, 0, 5, 3600, "Seconds between MQTT keep-alive pings"),
)


def mask(value, password=False):
    """What a secret looks like on screen: never the whole of it, never any of a short one."""
    if value is None or value == "":
        return _NOT_SET
    if password:
        return _HIDDEN_PASSWORD
    value = str(value)
    if len(value) < _MASK_SHOW_FROM:
        return _HIDDEN_SHORT
    return value[:_MASK_EDGE] + "\u2026" + value[-_MASK_EDGE:]


class UnknownSetting(KeyError):
    """A KeyError whose text reads the same on CPython (which would quote it) and MicroPython."""

    def __str__(self):
        return self.args[0]


def _find(ns, key):
    for setting in SETTINGS:
        if setting[0] == ns and setting[1] == key:
            return setting
    names = ", ".join(s[0] + "." + s[1] for s in SETTINGS)
    raise UnknownSetting("unknown setting '{}.{}'; valid settings: {}".format(ns, key, names))


def _name(setting):
    return setting[0] + "." + setting[1]


def _blank(value):
    return isinstance(value, str) and not value.strip()


def _whole_number(value):
    """int from an int or decimal text, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    digits = text[1:] if text.startswith("-") else text
    if not digits or not _all_digits(digits):
        return None
    return int(text)


def _all_digits(text):
    for ch in text:
        if ch not in "0123456789":
            return False
    return True


def _validate(setting, value):
    """The value to store (int or str), or a ValueError/TypeError that never quotes a secret."""
    kind, low, high = setting[2], setting[5], setting[6]
    if kind == INT:
        number = _whole_number(value)
        if number is None:
            raise ValueError("{} must be a whole number from {} to {}".format(
                _name(setting), low, high))
        if not low <= number <= high:
            raise ValueError("{} must be from {} to {}, not {}".format(
                _name(setting), low, high, number))
        return number
    if not isinstance(value, str):
        raise TypeError("{} must be text".format(_name(setting)))
    value = value.strip()
    if len(value.encode()) > VALUE_MAX:
        raise ValueError("{} is too long: at most {} bytes".format(_name(setting), VALUE_MAX))
    for ch in value:
        if ord(ch) < 32 or ord(ch) == 127:
            raise ValueError("{} must be one line without control characters".format(
                _name(setting)))
    if kind == URL and value and not (value.startswith("https://") or value.startswith("http://")):
        raise ValueError("{} must start with https:// or http://".format(_name(setting)))
    if kind == IDS and value:
        ids = [part.strip() for part in value.split(",")]
        for part in ids:
            if not part or not _all_digits(part):
                raise ValueError("{} must be user ids separated by commas, like 12345,67890"
                                 .format(_name(setting)))
        value = ",".join(ids)
    return value


class Config:
    """Settings read from NVS on each get(); set()/unset()/reset() are committed at once."""

    def __init__(self, nvs_class=platform.NVS):
        self._nvs_class = nvs_class
        self._spaces = {}
        self._overrides = {}
        self._subscribers = []
        self._buf = bytearray(VALUE_MAX)

    def _nvs(self, ns):
        nvs = self._spaces.get(ns)
        if nvs is None:
            nvs = self._nvs_class(ns)
            self._spaces[ns] = nvs
        return nvs

    def _stored(self, setting):
        """The stored text, or None when unset (or unreadable)."""
        try:
            n = self._nvs(setting[0]).get_blob(setting[1], self._buf)
            return str(memoryview(self._buf)[:n], "utf-8")
        except (OSError, UnicodeError):  # not found, too long for the buffer, or not UTF-8
            return None

    def _typed(self, setting, text):
        if setting[2] != INT:
            return text
        try:
            return int(text)
        except ValueError:  # a corrupt value falls back to the default
            return setting[3]

    def get(self, ns, key):
        """The override, else the stored value, else the default (int for INT, else str)."""
        setting = _find(ns, key)
        override = self._overrides.get((ns, key))
        if override is not None:
            return override
        text = self._stored(setting)
        if text is None:
            return setting[3]
        return self._typed(setting, text)

    def is_set(self, ns, key):
        """True when the setting has an override or a stored value."""
        setting = _find(ns, key)
        return (ns, key) in self._overrides or self._stored(setting) is not None

    def set(self, ns, key, value):
        """Validate, store and commit; blank text is the same as unset()."""
        setting = _find(ns, key)
        if _blank(value):
            self.unset(ns, key)
            return
        value = _validate(setting, value)
        nvs = self._nvs(ns)
        nvs.set_blob(key, str(value))
        nvs.commit()
        self._notify(ns, key)

    def unset(self, ns, key):
        """Forget the stored value (the default applies again); committed at once."""
        _find(ns, key)
        self._erase(ns, key)
        self._notify(ns, key)

    def _erase(self, ns, key):
        nvs = self._nvs(ns)
        try:
            nvs.erase_key(key)
        except OSError:  # nothing stored
            return
        nvs.commit()

    def reset(self):
        """Erase every known setting from NVS (overrides stay: they come from the command line)."""
        for setting in SETTINGS:
            self._erase(setting[0], setting[1])
        for setting in SETTINGS:
            self._notify(setting[0], setting[1])

    def override(self, ns, key, value):
        """Use value instead of the stored one, in memory only; None or "" drops the override."""
        setting = _find(ns, key)
        if value is None or _blank(value):
            self._overrides.pop((ns, key), None)
        else:
            self._overrides[(ns, key)] = _validate(setting, value)
        self._notify(ns, key)

    def shown(self):
        """[(ns, key, display)] for every setting, secrets masked."""
        rows = []
        for setting in SETTINGS:
            ns, key, flags = setting[0], setting[1], setting[4]
            value = self.get(ns, key)
            if flags & SECRET:
                display = mask(value, flags == PASSWORD)
            elif value == "":
                display = _NOT_SET
            else:
                display = str(value)
            rows.append((ns, key, display))
        return rows

    def subscribe(self, fn):
        """fn(ns, key) is called after each change, so a setting takes effect at once."""
        self._subscribers.append(fn)

    def _notify(self, ns, key):
        for fn in self._subscribers:
            try:
                fn(ns, key)
            except Exception as exc:  # one broken listener must not undo or block a saved change
                platform.print_exception(exc)
