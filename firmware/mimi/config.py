# Device settings in NVS: defaults, validation, in-memory overrides, masking, change notices.
from mimi import platform, table
from mimi.platform import const

VALUE_MAX = const(512)  # bytes of one stored value (UTF-8)
_MASK_SHOW_FROM = const(24)  # a secret this long or longer shows its first and last 4 characters
_MASK_EDGE = const(4)

SECRET = const(1)  # shown masked, never put into messages
_PASSWORD = const(3)  # a secret never shown even in part (includes the SECRET bit)

# Kinds of value
TEXT = "text"
URL = "url"
IDS = "ids"  # comma-separated decimal user ids
INT = "int"
# A model profile's name, a chain of them, a price, a whole profile (llm/profiles.py checks them).
KINDS = (TEXT, URL, IDS, INT, "name", "names", "price", "profile", "token")

_NOT_SET = "(not set)"
_HIDDEN_SHORT = "****"
_HIDDEN_PASSWORD = "********"

# The single source of truth, one row a line: "\n" namespace, key, kind, default, flags, low, high,
# description, tab-separated. A bytes constant stays in the image (flash), so the table costs next to
# no heap; a row is found by its "\nnamespace\tkey\t" and only that row is read (bytes: indexes
# without UTF-8 walks). low/high bound INT values; a TEXT row's low, when not empty, lists the words it takes
# (a|b|c); flags is 0, SECRET or _PASSWORD.
_TABLE = (
    b"\nwifi_config\tssid\ttext\t\t0\t\t\tWiFi network name"
    b"\nwifi_config\tpassword\ttext\t\t3\t\t\tWiFi password (wifi_set)"
    b"\nwifi_config\tsetup_port\tint\t80\t0\t1\t65535\t"
    b"TCP port of the setup page on the MimiClaw-XXXX access point"
    b"\ntg_config\tbot_token\ttext\t\t1\t\t\tTelegram bot token from @BotFather (set_tg_token)"
    b"\ntg_config\tapi_base\turl\thttps://api.telegram.org\t0\t\t\tTelegram Bot API base URL"
    b"\ntg_config\tallowlist\tids\t\t0\t\t\tTelegram user ids allowed to chat, comma-separated"
    b"\nllm_config\tapi_key\ttext\t\t1\t\t\tAnthropic API key (set_api_key)"
    b"\nllm_config\tmodel\ttext\tclaude-sonnet-4-5\t0\t\t\tClaude model name"
    b"\nllm_config\tapi_base\turl\thttps://api.anthropic.com\t0\t\t\tAnthropic API base URL"
    b"\nllm_config\tmax_tokens\tint\t4096\t0\t1\t64000\tMost tokens in one reply"
    b"\nllm_config\tchain\tnames\tclaude\t0\t\t\t"
    b"Model profiles the agent asks, first first, comma-separated: the next answers when one fails (llm_use)"
    b"\nllm_config\tfor_watcher\tname\t\t0\t\t\tProfile that judges watcher readings (llm_for); empty: the chain"
    b"\nllm_config\tfor_summary\tname\t\t0\t\t\tProfile that writes memory summaries (llm_for); empty: the chain"
    b"\nllm_config\tfor_heartbeat\tname\t\t0\t\t\tProfile of the heartbeat checks (llm_for); empty: the chain"
    b"\nllm_config\tprice\tprice\t\t0\t\t\t"
    b"The claude profile's price, USD per million tokens in/out, e.g. 3/15 (llm_price); empty: the list price"
    b"\nllm_config\tnote\tint\t1\t0\t0\t1\t1: a reply from a profile other than the chain's first says so (llm_note)"
    b"\nllm_config\tfallback\tint\t1\t0\t0\t1\t"
    b"1: once the day's token budget is spent, a free profile of the chain answers (budget_fallback)"
    b"\nllm_profiles\tp1\tprofile\t\t0\t\t\t"
    b"Model profile: name, anthropic|openai, base URL, model, [price in/out] (llm_add)"
    b"\nllm_profiles\tp2\tprofile\t\t0\t\t\tModel profile (llm_add)"
    b"\nllm_profiles\tp3\tprofile\t\t0\t\t\tModel profile (llm_add)"
    b"\nllm_profiles\tp4\tprofile\t\t0\t\t\tModel profile (llm_add)"
    b"\nllm_profiles\tp5\tprofile\t\t0\t\t\tModel profile (llm_add)"
    b"\nllm_profiles\tp6\tprofile\t\t0\t\t\tModel profile (llm_add)"
    b"\nllm_profiles\tk1\ttext\t\t1\t\t\tAPI key of model profile p1 (llm_key)"
    b"\nllm_profiles\tk2\ttext\t\t1\t\t\tAPI key of model profile p2 (llm_key)"
    b"\nllm_profiles\tk3\ttext\t\t1\t\t\tAPI key of model profile p3 (llm_key)"
    b"\nllm_profiles\tk4\ttext\t\t1\t\t\tAPI key of model profile p4 (llm_key)"
    b"\nllm_profiles\tk5\ttext\t\t1\t\t\tAPI key of model profile p5 (llm_key)"
    b"\nllm_profiles\tk6\ttext\t\t1\t\t\tAPI key of model profile p6 (llm_key)"
    b"\ngw_config\tws_port\tint\t18789\t0\t1\t65535\tWebSocket gateway TCP port"
    b"\nagent_config\theartbeat_s\tint\t1800\t0\t0\t86400\t"
    b"Seconds between heartbeat checks of HEARTBEAT.md (0 = off, at least 60)"
    b"\ntool_config\tgpio_allow\tids\t\t0\t\t\t"
    b"GPIO pins the agent may read and write, comma-separated (gpio_allow <pin>)"
    b"\nweb_config\tsearch_key\ttext\t\t1\t\t\t"
    b"Web search API key, Brave Search or Tavily (set_search_key <key>)"
    b"\nweb_config\tsearch_provider\ttext\tbrave\t0\t\t\tWeb search provider: brave or tavily"
    b"\nweb_config\tsearch_api\turl\t\t0\t\t\tWeb search endpoint URL; empty: the provider's own"
    b"\nweb_config\tsearch_mode\ttext\t\t0\t\t\t"
    b"Who searches the web: server (Claude's own), device (web_search with your key) or off; empty: "
    b"device when a search key is set, else server (set_search)"
    b"\nweb_config\tsearch_max_uses\tint\t3\t0\t1\t10\t"
    b"Searches (and fetches) Claude may run per request, server mode"
    b"\nweb_config\tserver_fetch\tint\t0\t0\t0\t1\t"
    b"1: Claude's own web_fetch (beta) instead of the device's, server mode"
    b"\nsafety_config\tday_searches\tint\t100\t0\t0\t100000\t"
    b"Claude's server web searches per day (0 = no limit); past it, requests offer no web search"
    b"\nmedia_config\tphoto_max_bytes\tint\t204800\t0\t10240\t5242880\t"
    b"Largest photo size (bytes) taken from Telegram; a smaller size of the photo is picked to fit"
    b"\nmedia_config\tphoto_max_px\tint\t1568\t0\t200\t8000\tLongest side (pixels) of a photo sent to Claude"
    b"\nmedia_config\tfile_max_bytes\tint\t1048576\t0\t1024\t5242880\tLargest PDF or text file sent to Claude"
    b"\nweb_config\tweather_api\turl\thttps://api.open-meteo.com\t0\t\t\tOpen-Meteo forecast API base URL"
    b"\nweb_config\tgeocode_api\turl\thttps://geocoding-api.open-meteo.com\t0\t\t\t"
    b"Open-Meteo geocoding API base URL"
    b"\ngw_config\tws_token\ttoken\t\t1\toff\t\t"
    b"Token a web chat client must present (set_ws_token); off: none needed, clients act as ws_open_role"
    b"\ngw_config\tws_role\ttext\towner\t0\tobserver|operator|owner\t\t"
    b"Role of web chat clients that present the token: observer, operator or owner (ws_role)"
    b"\ngw_config\tws_open_role\ttext\tobserver\t0\tobserver|operator|owner\t\t"
    b"Role of web chat clients while the token is off: observer, operator or owner (ws_open_role)"
    b"\ngw_config\thosts\ttext\t\t0\t\t\t"
    b"Other names the board answers to (Host), comma-separated; its IP, localhost and <hostname>.local always"
    b"\ngw_config\torigins\ttext\t\t0\t\t\t"
    b"Other web pages (origins, e.g. http://192.168.1.5:3000) that may use the web chat and /mcp, comma-separated"
    b"\nsafety_config\tcalls\tint\t3\t0\t1\t1000\tIdentical acting tool calls allowed per window"
    b"\nsafety_config\twindow_s\tint\t600\t0\t1\t86400\tSeconds in which repeated identical calls are counted"
    b"\nsafety_config\tquiet_s\tint\t1800\t0\t1\t86400\t"
    b"Quiet seconds after which an open circuit breaker closes"
    b"\ntg_config\troles\ttext\t\t0\t\t\t"
    b"Roles of allowlisted Telegram users: id=owner|operator|observer, comma-separated (tg_allow <id> "
    b"<role>)"
    b"\ntool_config\tpolicy\ttext\t\t0\t\t\t"
    b"Autonomy levels changed from their defaults: tool=autonomous|report|confirm|blocked "
    b"(tool_policy)"
    b"\nsafety_config\tconfirm_s\tint\t120\t0\t5\t3600\t"
    b"Seconds a confirmation question waits for Approve before it counts as Deny"
    b"\nsafety_config\tuser_per_min\tint\t10\t0\t1\t1000\tMessages one user may send per minute"
    b"\nsafety_config\tllm_per_hour\tint\t200\t0\t1\t100000\tLLM calls the device may make per hour"
    b"\nsafety_config\tday_tokens\tint\t2000000\t0\t0\t1000000000\t"
    b"Tokens the device may use per day, all kinds counted, a free model profile's never (0 = no limit)"
    b"\nllm_config\twatch_model\ttext\t\t0\t\t\t"
    b"Claude model that judges watcher readings when claude does (set_watch_model); empty: the profile's"
    b"\nsafety_config\twatch_evals_min\tint\t6\t0\t1\t600\t"
    b"Watcher evaluations allowed per minute, all watchers"
    b"\nsafety_config\twatch_acts_hour\tint\t10\t0\t1\t1000\t"
    b"Watcher actions (tool calls and notices) allowed per hour, all watchers"
    b"\nsafety_config\trule_fires_hour\tint\t60\t0\t1\t3600\t"
    b"Times one local rule may fire per hour; past it the rule is paused and the owner told"
    b"\nmqtt_config\thost\ttext\t\t0\t\t\tMQTT broker host name or IP; empty: MQTT off (mqtt_set)"
    b"\nmqtt_config\tport\tint\t0\t0\t0\t65535\tMQTT broker port; 0: 1883, or 8883 with TLS"
    b"\nmqtt_config\tuser\ttext\t\t0\t\t\tMQTT user name (mqtt_auth)"
    b"\nmqtt_config\tpassword\ttext\t\t3\t\t\tMQTT password (mqtt_auth)"
    b"\nmqtt_config\ttls\tint\t0\t0\t0\t1\t1: MQTT over TLS, the broker's certificate checked (mqtt_tls)"
    b"\nmqtt_config\tdevice_id\ttext\t\t0\t\t\t"
    b"This board's name on MQTT (topics mimi/<id>/...); empty: mimi-<chip id> (mqtt_id)"
    b"\nmqtt_config\trole\ttext\tobserver\t0\t\t\t"
    b"Role of messages arriving on MQTT: observer, operator or owner (mqtt_role)"
    b"\nmqtt_config\tdiscovery\tint\t1\t0\t0\t1\t1: announce the board to Home Assistant (mqtt_discovery)"
    b"\nmqtt_config\tha_prefix\ttext\thomeassistant\t0\t\t\tHome Assistant's discovery prefix"
    b"\nmqtt_config\tpublish_allow\ttext\t\t0\t\t\t"
    b"Topics (filters with + and #) the mqtt_publish tool may publish to, comma-separated (mqtt_allow)"
    b"\nmqtt_config\tkeepalive\tint\t60\t0\t5\t3600\tSeconds between MQTT keep-alive pings"
    b"\nmcp_config\ttoken\ttoken\t\t1\t\t\t"
    b"Token MCP clients present (Authorization: Bearer); empty: the web chat's token (set_mcp_token)"
    b"\nmcp_config\trole\ttext\tobserver\t0\t\t\t"
    b"Role of MCP clients' tool calls: observer, operator or owner (mcp_role)"
    b"\nmcp_config\ttimeout_s\tint\t30\t0\t1\t300\tSeconds one call to an MCP server may take"
    b"\nvoice_config\tstt_url\turl\t\t0\t\t\tSpeech-to-text service (OpenAI-compatible) for voice notes (set_stt)"
    b"\nvoice_config\tstt_model\ttext\twhisper-1\t0\t\t\tSpeech-to-text model"
    b"\nvoice_config\tstt_key\ttext\t\t1\t\t\tSpeech-to-text API key (set_stt_key)"
    b"\nvoice_config\treply\ttext\toff\t0\t\t\tVoice replies on Telegram: off, on or auto (to a voice note; set_voice)"
    b"\nvoice_config\ttts_url\turl\t\t0\t\t\tText-to-speech service (set_tts); empty: the speech-to-text one"
    b"\nvoice_config\ttts_model\ttext\ttts-1\t0\t\t\tText-to-speech model"
    b"\nvoice_config\ttts_voice\ttext\talloy\t0\t\t\tText-to-speech voice"
    b"\nvoice_config\ttts_key\ttext\t\t1\t\t\tText-to-speech API key (set_tts_key); empty: the speech-to-text key"
    b"\nvoice_config\ttimeout_s\tint\t60\t0\t5\t300\tSeconds a speech service may think before it answers"
    b"\nvoice_config\tmax_bytes\tint\t1048576\t0\t10240\t5242880\tLargest voice note taken (a minute: 100-300 KB)"
    b"\nvoice_config\tstt_cents_hour\tint\t36\t0\t0\t100000\tSpeech-to-text price, US cents an hour of audio"
    b"\nvoice_config\ttts_cents_mchar\tint\t1500\t0\t0\t1000000\tText-to-speech price, US cents a million characters"
    b"\nsafety_config\tday_audio_s\tint\t3600\t0\t0\t86400\tSeconds of voice notes transcribed per day (0 = no limit)"
    b"\nsafety_config\tday_tts_chars\tint\t100000\t0\t0\t100000000\tCharacters spoken per day (0 = no limit)"
    b"\nsystem\tsmall_board\ttext\tauto\t0\ton|off|auto\t\t"
    b"Small-board mode (no PSRAM): on, off, or auto (on when the heap at boot is under 512 KB)"
    b"\n"
)


def _setting(at):
    """(namespace, key, kind, default, flags, low, high, description) from the row at `at`."""
    ns, key, kind, default, flags, low, high, description = table.fields(_TABLE, at)
    if kind == INT:
        return ns, key, kind, int(default), int(flags), int(low), int(high), description
    return ns, key, kind, default, int(flags), None, None, description


class _Settings:
    """SETTINGS: iterating yields every setting as a tuple, in table order, each row parsed then."""

    def __iter__(self):
        for at in table.rows(_TABLE):
            yield _setting(at)


SETTINGS = _Settings()
_FLAGS_FIELD = const(4)  # namespace, key, kind, default, then the flags (one digit)


def secret_names():
    """(namespace, key) of every secret setting, in table order: each row's flags digit read in place, only
    the secret rows' names decoded (the audit asks at every tool call: no row parsed whole)."""
    found = []
    for at in table.rows(_TABLE):
        if (_TABLE[table.skip(_TABLE, at, _FLAGS_FIELD)] - 48) & SECRET:  # b"0"[0] is 48
            found.append((str(table.field(_TABLE, at), "utf-8"), str(table.field(_TABLE, at, 1), "utf-8")))
    return found


def is_secret(ns, key):
    """True for a secret setting, False for any other or an unknown name (asked as a line is typed: no error
    built, only the one row read)."""
    at = table.find(_TABLE, ns, key)
    return at >= 0 and bool(int(_field(at, 2)) & SECRET)


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
    """Where the row of ns.key goes on after its key (at its kind), or UnknownSetting."""
    at = table.find(_TABLE, ns, key)
    if at < 0:
        names = ", ".join(s[0] + "." + s[1] for s in SETTINGS)
        raise UnknownSetting("unknown setting '{}.{}'; valid settings: {}".format(ns, key, names))
    return at


def _field(at, index):
    """Field index (0 kind, 1 default, 2 flags, 3 low, 4 high) of the row at `at`, as text."""
    return str(table.field(_TABLE, at, index), "utf-8")


def _is_int(at):
    return _TABLE.startswith(b"int\t", at)  # INT, without building the text each time


def _default(at):
    """The default of the row at `at`: int for INT, else str."""
    text = _field(at, 1)
    return int(text) if _is_int(at) else text


def _blank(value):
    return isinstance(value, str) and not value.strip()


def _validate(ns, key, at, value):
    """The value to store (int or str), or a ValueError/TypeError that never quotes a secret: the row's kind,
    range or words checked by setting_values.py (loaded when a setting is set, and let go after)."""
    from mimi import setting_values

    try:
        return setting_values.checked(ns + "." + key, _field(at, 0), _field(at, 3), _field(at, 4), value, VALUE_MAX)
    finally:
        platform.unload("mimi.setting_values")


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

    def _stored(self, ns, key):
        """The stored text, or None when unset (or unreadable)."""
        try:
            n = self._nvs(ns).get_blob(key, self._buf)
            return str(memoryview(self._buf)[:n], "utf-8")
        except (OSError, UnicodeError):  # not found, too long for the buffer, or not UTF-8
            return None

    def _typed(self, at, text):
        if not _is_int(at):
            return text
        try:
            return int(text)
        except ValueError:  # a corrupt value falls back to the default
            return _default(at)

    def get(self, ns, key):
        """The override, else the stored value, else the default (int for INT, else str)."""
        at = _find(ns, key)
        override = self._overrides.get((ns, key))
        if override is not None:
            return override
        text = self._stored(ns, key)
        if text is None:
            return _default(at)
        return self._typed(at, text)

    def is_set(self, ns, key):
        """True when the setting has an override or a stored value."""
        _find(ns, key)
        return (ns, key) in self._overrides or self._stored(ns, key) is not None

    def set(self, ns, key, value):
        """Validate, store and commit; blank text is the same as unset()."""
        at = _find(ns, key)
        if _blank(value):
            self.unset(ns, key)
            return
        value = _validate(ns, key, at, value)
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
        at = _find(ns, key)
        if value is None or _blank(value):
            self._overrides.pop((ns, key), None)
        else:
            self._overrides[(ns, key)] = _validate(ns, key, at, value)
        self._notify(ns, key)

    def shown(self):
        """[(ns, key, display)] for every setting, secrets masked."""
        rows = []
        for setting in SETTINGS:
            ns, key, flags = setting[0], setting[1], setting[4]
            value = self.get(ns, key)
            if flags & SECRET:
                display = mask(value, flags == _PASSWORD)
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
