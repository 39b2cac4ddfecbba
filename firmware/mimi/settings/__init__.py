# Device settings, one package: the table of every setting and the Config that keeps them in NVS (defaults,
# in-memory overrides, masking, change notices); what a value may be (values.py) and what each setting is for
# (notes.py) are loaded when asked and let go after (LET_GO).
from mimi import heap, platform, table
from mimi.platform import const

# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it: the checks, when
# a setting is set (a 2.8 KB .mpy file; in ROMFS and frozen the split saves only its objects), and the
# descriptions, for the web app's Settings view (5.2 KB of .mpy constants while loaded; flash elsewhere).
LET_GO = "values:setting notes:view"

VALUE_MAX = const(512)  # bytes of one stored value (UTF-8)
_MASK_SHOW_FROM = const(20)  # a key this long or longer shows its first and last 4 characters (12+ stay hidden)
_MASK_EDGE = const(4)

SECRET = const(1)  # shown masked, never put into messages
_PASSWORD = const(3)  # a secret never shown even in part (includes the SECRET bit)

# Kinds of value
TEXT = "text"
URL = "url"
IDS = "ids"  # comma-separated decimal user ids
INT = "int"
# A model profile's name, a chain of them, a price, a whole profile (llm/profiles.py checks them).
KINDS = (TEXT, URL, IDS, INT, "name", "names", "price", "profile", "token", "roles")

_NOT_SET = "(not set)"
KEY_DROPPED = "key dropped: the host changed"  # what a path that moved a URL says when set() or unset() dropped its key
_HIDDEN_SHORT = "****"
_HIDDEN_PASSWORD = "********"

# The single source of truth, one row a line: "\n" namespace, key, kind, default, flags, low, high,
# tab-separated (what each is for, shown beside it: notes.py, loaded only to be shown). A bytes
# constant stays in the image (flash), so the table costs next to no heap; a row is found by its
# "\nnamespace\tkey\t" and only that row is read (bytes: indexes without UTF-8 walks). low/high bound INT
# values; a TEXT row's low, when not empty, lists the words it takes (a|b|c) (a roles row: the roles); a URL or
# profile row's high names the key (same namespace) that belongs to its URL's origin: a URL moved to another scheme,
# host or port drops it (set, unset); flags is 0, SECRET or _PASSWORD.
_TABLE = (
    b'\nwifi_config\tssid\ttext\t\t0\t\t'
    b'\nwifi_config\tpassword\ttext\t\t3\t\t'
    b'\nwifi_config\tsetup_port\tint\t80\t0\t1\t65535'
    b'\ntg_config\tbot_token\ttext\t\t1\t\t'
    b'\ntg_config\tapi_base\turl\thttps://api.telegram.org\t0\t\tbot_token'
    b'\ntg_config\tallowlist\tids\t\t0\t\t'
    b'\nllm_config\tapi_key\ttext\t\t1\t\t'
    b'\nllm_config\tmodel\ttext\tclaude-sonnet-4-5\t0\t\t'
    b'\nllm_config\tapi_base\turl\thttps://api.anthropic.com\t0\t\tapi_key'
    b'\nllm_config\tmax_tokens\tint\t4096\t0\t1\t64000'
    b'\nllm_config\tchain\tnames\tclaude\t0\t\t'
    b'\nllm_config\tfor_watcher\tname\t\t0\t\t'
    b'\nllm_config\tfor_summary\tname\t\t0\t\t'
    b'\nllm_config\tfor_heartbeat\tname\t\t0\t\t'
    b'\nllm_config\tprice\tprice\t\t0\t\t'
    b'\nllm_config\tnote\tint\t1\t0\t0\t1'
    b'\nllm_config\tfallback\tint\t1\t0\t0\t1'
    b'\nllm_profiles\tp1\tprofile\t\t0\t\tk1'
    b'\nllm_profiles\tp2\tprofile\t\t0\t\tk2'
    b'\nllm_profiles\tp3\tprofile\t\t0\t\tk3'
    b'\nllm_profiles\tp4\tprofile\t\t0\t\tk4'
    b'\nllm_profiles\tp5\tprofile\t\t0\t\tk5'
    b'\nllm_profiles\tp6\tprofile\t\t0\t\tk6'
    b'\nllm_profiles\tk1\ttext\t\t1\t\t'
    b'\nllm_profiles\tk2\ttext\t\t1\t\t'
    b'\nllm_profiles\tk3\ttext\t\t1\t\t'
    b'\nllm_profiles\tk4\ttext\t\t1\t\t'
    b'\nllm_profiles\tk5\ttext\t\t1\t\t'
    b'\nllm_profiles\tk6\ttext\t\t1\t\t'
    b'\ngw_config\tws_port\tint\t18789\t0\t1\t65535'
    b'\nagent_config\theartbeat_s\tint\t1800\t0\t0\t86400'
    b'\ntool_config\tgpio_allow\tids\t\t0\t\t'
    b'\nweb_config\tsearch_key\ttext\t\t1\t\t'
    b'\nweb_config\tsearch_provider\ttext\tbrave\t0\t\t'
    b'\nweb_config\tsearch_api\turl\t\t0\t\t'
    b'\nweb_config\tsearch_mode\ttext\t\t0\t\t'
    b'\nweb_config\tsearch_max_uses\tint\t3\t0\t1\t10'
    b'\nweb_config\tserver_fetch\tint\t0\t0\t0\t1'
    b'\nsafety_config\tday_searches\tint\t100\t0\t0\t100000'
    b'\nmedia_config\tphoto_max_bytes\tint\t204800\t0\t10240\t5242880'
    b'\nmedia_config\tphoto_max_px\tint\t1568\t0\t200\t8000'
    b'\nmedia_config\tfile_max_bytes\tint\t1048576\t0\t1024\t5242880'
    b'\nweb_config\tweather_api\turl\thttps://api.open-meteo.com\t0\t\t'
    b'\nweb_config\tgeocode_api\turl\thttps://geocoding-api.open-meteo.com\t0\t\t'
    b'\ngw_config\tws_token\ttoken\t\t1\toff\t'
    b'\ngw_config\tws_role\ttext\towner\t0\tobserver|operator|owner\t'
    b'\ngw_config\tws_open_role\ttext\tobserver\t0\tobserver|operator|owner\t'
    b'\ngw_config\thosts\ttext\t\t0\t\t'
    b'\ngw_config\torigins\ttext\t\t0\t\t'
    b'\nsafety_config\tcalls\tint\t3\t0\t1\t1000'
    b'\nsafety_config\twindow_s\tint\t600\t0\t1\t86400'
    b'\nsafety_config\tquiet_s\tint\t1800\t0\t1\t86400'
    b'\ntg_config\troles\troles\t\t0\tobserver|operator|owner\t'
    b'\ntool_config\tpolicy\ttext\t\t0\t\t'
    b'\nsafety_config\tconfirm_s\tint\t120\t0\t5\t3600'
    b'\nsafety_config\tuser_per_min\tint\t10\t0\t1\t1000'
    b'\nsafety_config\tllm_per_hour\tint\t200\t0\t1\t100000'
    b'\nsafety_config\tday_tokens\tint\t2000000\t0\t0\t1000000000'
    b'\nllm_config\twatch_model\ttext\t\t0\t\t'
    b'\nsafety_config\twatch_evals_min\tint\t6\t0\t1\t600'
    b'\nsafety_config\twatch_acts_hour\tint\t10\t0\t1\t1000'
    b'\nsafety_config\trule_fires_hour\tint\t60\t0\t1\t3600'
    b'\nmqtt_config\thost\ttext\t\t0\t\t'
    b'\nmqtt_config\tport\tint\t0\t0\t0\t65535'
    b'\nmqtt_config\tuser\ttext\t\t0\t\t'
    b'\nmqtt_config\tpassword\ttext\t\t3\t\t'
    b'\nmqtt_config\ttls\tint\t0\t0\t0\t1'
    b'\nmqtt_config\tdevice_id\ttext\t\t0\t\t'
    b'\nmqtt_config\trole\ttext\tobserver\t0\tobserver|operator|owner\t'
    b'\nmqtt_config\tdiscovery\tint\t1\t0\t0\t1'
    b'\nmqtt_config\tha_prefix\ttext\thomeassistant\t0\t\t'
    b'\nmqtt_config\tpublish_allow\ttext\t\t0\t\t'
    b'\nmqtt_config\tkeepalive\tint\t60\t0\t5\t3600'
    b'\nmx_config\thomeserver\turl\t\t0\t\ttoken'
    b'\nmx_config\tuser\ttext\t\t0\t\t'
    b'\nmx_config\ttoken\ttext\t\t1\t\t'
    b'\nmx_config\tdevice\ttext\t\t0\t\t'
    b'\nmx_config\tallow\ttext\t\t0\t\t'
    b'\nmx_config\tdirect\ttext\t\t0\t\t'
    b'\ndc_config\ttoken\ttext\t\t1\t\t'
    b'\ndc_config\tapi_base\turl\thttps://discord.com/api/v10\t0\t\ttoken'
    b'\ndc_config\tallow\ttext\t\t0\t\t'
    b'\ndc_config\tdirect\ttext\t\t0\t\t'
    b'\ndc_config\tcontent\tint\t0\t0\t0\t1'
    b'\nmcp_config\ttoken\ttoken\t\t1\t\t'
    b'\nmcp_config\trole\ttext\tobserver\t0\tobserver|operator|owner\t'
    b'\nmcp_config\ttimeout_s\tint\t30\t0\t1\t300'
    b'\nvoice_config\tstt_url\turl\t\t0\t\tstt_key'
    b'\nvoice_config\tstt_model\ttext\twhisper-1\t0\t\t'
    b'\nvoice_config\tstt_key\ttext\t\t1\t\t'
    b'\nvoice_config\treply\ttext\toff\t0\t\t'
    b'\nvoice_config\ttts_url\turl\t\t0\t\ttts_key'
    b'\nvoice_config\ttts_model\ttext\ttts-1\t0\t\t'
    b'\nvoice_config\ttts_voice\ttext\talloy\t0\t\t'
    b'\nvoice_config\ttts_key\ttext\t\t1\t\t'
    b'\nvoice_config\ttimeout_s\tint\t60\t0\t5\t300'
    b'\nvoice_config\tmax_bytes\tint\t1048576\t0\t10240\t5242880'
    b'\nvoice_config\tstt_cents_hour\tint\t36\t0\t0\t100000'
    b'\nvoice_config\ttts_cents_mchar\tint\t1500\t0\t0\t1000000'
    b'\nsafety_config\tday_audio_s\tint\t3600\t0\t0\t86400'
    b'\nsafety_config\tday_tts_chars\tint\t100000\t0\t0\t100000000'
    b'\nsystem\tsmall_board\ttext\tauto\t0\ton|off|auto\t'
    b"\n"
)


def _setting(at, notes=None):
    """(namespace, key, kind, default, flags, low, high, description) from the row at `at`: the description
    from notes.py (notes) when given, else None."""
    ns, key, kind, default, flags, low, high = table.fields(_TABLE, at)
    description = notes.of(ns, key) if notes else None
    if kind == INT:
        return ns, key, kind, int(default), int(flags), int(low), int(high), description
    return ns, key, kind, default, int(flags), None, None, description


class _Settings:
    """SETTINGS: iterating yields every setting as a tuple, in table order, each row parsed then, with its
    description (notes.py: loaded for the walk, let go with the web app's view that asked); _ROWS: the same
    without."""

    def __init__(self, described):
        self._described = described

    def __iter__(self):
        notes = None
        if self._described:
            from mimi.settings import notes
        for at in table.rows(_TABLE):
            yield _setting(at, notes)


SETTINGS = _Settings(True)
_ROWS = _Settings(False)  # the settings the config walks itself: no descriptions loaded
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


def mask(value, password=False, words=""):
    """What a secret looks like on screen: never the whole of it, never any of a short one; one of the words its
    setting takes instead of a secret (words: 'off' for the gateway token) is a word, shown as it is."""
    if value is None or value == "":
        return _NOT_SET
    if words and value in words.split("|"):
        return value
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
        names = ", ".join(s[0] + "." + s[1] for s in _ROWS)
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
    range or words checked by values.py (loaded when a setting is set, and let go after)."""
    return _values("checked", ns + "." + key, _field(at, 0), _field(at, 3), _field(at, 4), value, VALUE_MAX,
                   _field(at, 2) != "0")


def looks_like_key(text):
    """True when text is shaped like a key (values.py's one rule): a slot that is not secret refuses it, unshown."""
    return _values("looks_like_key", text)


def _values(name, *args):
    """values.<name>(*args), in a setting's scope: the checks (and the URL parser they may load) let go after."""
    with heap.scope("setting"):
        from mimi.settings import values

        return getattr(values, name)(*args)


class Config:
    """Settings read from NVS on each get(); set()/unset()/reset() are committed at once."""

    def __init__(self, nvs_class=platform.NVS):
        self._nvs_class = nvs_class
        self._spaces = {}
        self._overrides = {}
        self._command_line = None  # the host runner's [(ns, key, value)] (host_sim/run.py), kept over restarts
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
        """Validate, store and commit; blank text is the same as unset(). True when the key that belongs to the
        URL was dropped first: the URL goes to another scheme, host or port (KEY_DROPPED says so)."""
        at = _find(ns, key)
        if _blank(value):
            return self.unset(ns, key)
        value = _validate(ns, key, at, value)
        dropped = self._drop_key(ns, key, at, str(value))  # first: the new URL never meets the old key
        nvs = self._nvs(ns)
        nvs.set_blob(key, str(value))
        nvs.commit()
        self._drop_override(ns, key)
        self._notify(ns, key)
        return dropped

    def _drop_override(self, ns, key):
        """A value set on the board (console, web app) wins over the host runner's command line from now on, also
        after a restart of that run: its list forgets the value too. Nothing to do on a board."""
        if self._overrides.pop((ns, key), None) is not None and self._command_line is not None:
            self._command_line[:] = [given for given in self._command_line if (given[0], given[1]) != (ns, key)]

    def unset(self, ns, key):
        """Forget the stored value (the default applies again); committed at once. True when the key that
        belongs to the URL was dropped first (as set())."""
        at = _find(ns, key)
        dropped = self._drop_key(ns, key, at, _field(at, 1))
        self._erase(ns, key)
        self._notify(ns, key)
        return dropped

    def _drop_key(self, ns, key, at, after):
        """Erase the key that belongs to the URL ns.key (the row at `at`: its high names it) when the URL's text
        `after` leaves its origin: True when it did. Nothing is loaded unless such a key is stored."""
        owned = "" if _is_int(at) else _field(at, 4)
        if not owned or not self._stored(ns, owned):
            return False
        before = self._stored(ns, key)
        if not _values("moved", _field(at, 0), _field(at, 1) if before is None else before, after):
            return False
        self._erase(ns, owned)
        self._notify(ns, owned)
        return True

    def _erase(self, ns, key):
        nvs = self._nvs(ns)
        try:
            nvs.erase_key(key)
        except OSError:  # nothing stored
            return
        nvs.commit()

    def reset(self):
        """Erase every known setting from NVS (overrides stay: they come from the command line)."""
        for setting in _ROWS:
            self._erase(setting[0], setting[1])
        for setting in _ROWS:
            self._notify(setting[0], setting[1])

    def from_command_line(self, given):
        """The host runner's settings, [(ns, key, value)]: overrides until a value is set here (see set)."""
        self._command_line = given
        for ns, key, value in given:
            self.override(ns, key, value)

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
        for setting in _ROWS:
            ns, key, flags = setting[0], setting[1], setting[4]
            value = self.get(ns, key)
            if flags & SECRET:  # a word it takes instead of a secret (the gateway token's off) is shown
                display = mask(value, flags == _PASSWORD, _field(table.find(_TABLE, ns, key), 3))
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
