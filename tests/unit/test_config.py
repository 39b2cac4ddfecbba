# Config: defaults, NVS persistence, overrides, validation, masking, reset and change notices.
import esp32
from mimi import settings
from mimi.settings import Config, mask
from support import raises, remove_tree, tempdir

API_KEY = "sk-ant-api03-SECRETSECRETSECRET-wxyz"
BOT_TOKEN = "123456789:AAHsecretTOKENsecretTOKEN"
WIFI_PASSWORD = "hunter2-but-a-longer-one"
SHORT_TOKEN = "tiny-secret"


def _fresh():
    esp32.set_flash_dir(None)
    return Config()


def _all_text(cfg):
    return " ".join(" ".join(str(part) for part in row) for row in cfg.shown())


def test_defaults_when_nothing_is_stored():
    cfg = _fresh()
    assert cfg.get("llm_config", "model") == "claude-sonnet-4-5"
    assert cfg.get("llm_config", "api_base") == "https://api.anthropic.com"
    assert cfg.get("llm_config", "max_tokens") == 4096
    assert cfg.get("tg_config", "api_base") == "https://api.telegram.org"
    assert cfg.get("tg_config", "allowlist") == ""
    assert cfg.get("gw_config", "ws_port") == 18789
    assert cfg.get("gw_config", "ws_token") == ""
    assert cfg.get("wifi_config", "ssid") == ""
    assert not cfg.is_set("llm_config", "model")


def test_set_is_committed_at_once_and_survives_a_power_cycle():
    path = tempdir("cfg")
    try:
        esp32.set_flash_dir(path)
        Config().set("llm_config", "api_key", API_KEY)
        Config().set("gw_config", "ws_port", "8080")
        esp32._reload()
        cfg = Config()
        assert cfg.get("llm_config", "api_key") == API_KEY
        assert cfg.get("gw_config", "ws_port") == 8080
        assert cfg.is_set("llm_config", "api_key")
    finally:
        esp32.set_flash_dir(None)
        remove_tree(path)


def test_values_are_stored_as_nvs_blobs_under_mimiclaw_names():
    cfg = _fresh()
    cfg.set("tg_config", "bot_token", BOT_TOKEN)
    cfg.set("llm_config", "max_tokens", 1000)
    buf = bytearray(settings.VALUE_MAX)
    n = esp32.NVS("tg_config").get_blob("bot_token", buf)
    assert str(buf[:n], "utf-8") == BOT_TOKEN
    n = esp32.NVS("llm_config").get_blob("max_tokens", buf)
    assert str(buf[:n], "utf-8") == "1000"


def test_int_settings_parse_and_check_their_range():
    cfg = _fresh()
    cfg.set("llm_config", "max_tokens", " 64000 ")
    assert cfg.get("llm_config", "max_tokens") == 64000
    for bad in ("0", "64001", "-5", "abc", "12.5", "1e3", 3.0):
        exc = raises(ValueError, cfg.set, "llm_config", "max_tokens", bad)
        assert "llm_config.max_tokens" in str(exc) and "64000" in str(exc)
    assert cfg.get("llm_config", "max_tokens") == 64000
    raises(ValueError, cfg.set, "gw_config", "ws_port", 70000)
    cfg.set("llm_config", "max_tokens", " ")  # blank means unset, for numbers too
    assert cfg.get("llm_config", "max_tokens") == 4096


def test_unknown_setting_is_a_keyerror_listing_the_valid_ones():
    cfg = _fresh()
    exc = raises(KeyError, cfg.set, "llm_config", "apikey", "x")
    text = str(exc)
    assert "llm_config.apikey" in text
    assert "llm_config.api_key" in text and "wifi_config.ssid" in text
    assert text.startswith("unknown setting")
    raises(KeyError, cfg.get, "nope", "model")
    raises(KeyError, cfg.unset, "llm_config", "nope")
    raises(KeyError, cfg.override, "llm_config", "nope", "x")


def test_text_validation():
    cfg = _fresh()
    raises(ValueError, cfg.set, "llm_config", "api_base", "ftp://example.com")
    cfg.set("llm_config", "api_base", "http://127.0.0.1:8080")
    assert cfg.get("llm_config", "api_base") == "http://127.0.0.1:8080"
    raises(ValueError, cfg.set, "llm_config", "model", "two\nlines")
    raises(TypeError, cfg.set, "llm_config", "model", 5)
    cfg.set("tg_config", "allowlist", " 12345, 678 ")
    assert cfg.get("tg_config", "allowlist") == "12345,678"
    raises(ValueError, cfg.set, "tg_config", "allowlist", "12345,bob")
    raises(ValueError, cfg.set, "tg_config", "allowlist", "12345,,6")


def test_value_size_limit():
    cfg = _fresh()
    cfg.set("llm_config", "model", "m" * settings.VALUE_MAX)
    assert cfg.get("llm_config", "model") == "m" * settings.VALUE_MAX
    raises(ValueError, cfg.set, "llm_config", "model", "m" * (settings.VALUE_MAX + 1))
    # the limit counts UTF-8 bytes, not characters
    raises(ValueError, cfg.set, "llm_config", "model", "\u00e9" * (settings.VALUE_MAX // 2 + 1))


def test_set_strips_pasted_whitespace_and_empty_means_unset():
    cfg = _fresh()
    cfg.set("llm_config", "api_key", "  " + API_KEY + "\n")
    assert cfg.get("llm_config", "api_key") == API_KEY
    cfg.set("llm_config", "model", "claude-x")
    cfg.set("llm_config", "model", "")
    assert cfg.get("llm_config", "model") == "claude-sonnet-4-5"
    assert not cfg.is_set("llm_config", "model")


def test_unset_restores_the_default_durably():
    path = tempdir("cfg")
    try:
        esp32.set_flash_dir(path)
        cfg = Config()
        cfg.set("llm_config", "model", "claude-x")
        cfg.unset("llm_config", "model")
        cfg.unset("llm_config", "model")  # unsetting twice is fine
        esp32._reload()
        assert Config().get("llm_config", "model") == "claude-sonnet-4-5"
    finally:
        esp32.set_flash_dir(None)
        remove_tree(path)


def test_override_wins_in_memory_only():
    path = tempdir("cfg")
    try:
        esp32.set_flash_dir(path)
        cfg = Config()
        cfg.set("llm_config", "api_base", "https://stored.example")
        cfg.override("llm_config", "api_base", "http://127.0.0.1:9999")
        assert cfg.get("llm_config", "api_base") == "http://127.0.0.1:9999"
        assert cfg.is_set("llm_config", "api_base")
        cfg.override("gw_config", "ws_port", "1234")
        assert cfg.get("gw_config", "ws_port") == 1234
        raises(ValueError, cfg.override, "gw_config", "ws_port", "0")
        esp32._reload()
        fresh = Config()
        assert fresh.get("llm_config", "api_base") == "https://stored.example"
        assert fresh.get("gw_config", "ws_port") == 18789
        cfg.override("llm_config", "api_base", None)
        assert cfg.get("llm_config", "api_base") == "https://stored.example"
    finally:
        esp32.set_flash_dir(None)
        remove_tree(path)


def test_a_value_set_on_the_board_wins_over_the_command_line_from_then_on():
    path = tempdir("cfg")
    try:
        esp32.set_flash_dir(path)
        given = [("llm_config", "api_base", "http://127.0.0.1:9999"), ("llm_config", "model", "offline-demo")]
        cfg = Config()
        cfg.from_command_line(given)
        assert cfg.get("llm_config", "api_base") == "http://127.0.0.1:9999"
        cfg.set("llm_config", "api_base", "http://192.168.1.20:4000")  # the console's word: in effect now
        assert cfg.get("llm_config", "api_base") == "http://192.168.1.20:4000"
        assert given == [("llm_config", "model", "offline-demo")]  # a restart of this run keeps it so
        again = Config()
        again.from_command_line(given)
        assert again.get("llm_config", "api_base") == "http://192.168.1.20:4000"
        assert again.get("llm_config", "model") == "offline-demo"
    finally:
        esp32.set_flash_dir(None)
        remove_tree(path)


def test_reset_erases_every_setting_but_keeps_overrides():
    path = tempdir("cfg")
    try:
        esp32.set_flash_dir(path)
        cfg = Config()
        for ns, key, value in (("wifi_config", "ssid", "home"),
                               ("wifi_config", "password", WIFI_PASSWORD),
                               ("tg_config", "bot_token", BOT_TOKEN),
                               ("llm_config", "max_tokens", 10),
                               ("gw_config", "ws_token", SHORT_TOKEN)):
            cfg.set(ns, key, value)
        esp32.NVS("llm_config").set_blob("unrelated", b"kept")
        esp32.NVS("llm_config").commit()
        cfg.override("llm_config", "model", "claude-over")
        cfg.reset()
        esp32._reload()
        after = Config()
        for setting in settings.SETTINGS:
            assert not after.is_set(setting[0], setting[1]), setting[1]
            assert after.get(setting[0], setting[1]) == setting[3]
        assert cfg.get("llm_config", "model") == "claude-over"
        assert esp32.NVS("llm_config").get_blob("unrelated", bytearray(8)) == 4
    finally:
        esp32.set_flash_dir(None)
        remove_tree(path)


def test_subscribers_hear_every_change():
    cfg = _fresh()
    heard = []
    cfg.subscribe(lambda ns, key: heard.append((ns, key, cfg.get(ns, key))))
    cfg.set("llm_config", "model", "claude-x")
    cfg.unset("llm_config", "model")
    cfg.override("gw_config", "ws_port", 9000)
    assert heard == [("llm_config", "model", "claude-x"),
                     ("llm_config", "model", "claude-sonnet-4-5"),
                     ("gw_config", "ws_port", 9000)]
    del heard[:]
    cfg.reset()
    assert len(heard) == len(list(settings.SETTINGS))
    assert ("llm_config", "api_key", "") in heard


def test_a_failing_subscriber_does_not_undo_the_change_or_silence_others():
    cfg = _fresh()
    heard = []

    def broken(ns, key):
        raise RuntimeError("listener bug")

    cfg.subscribe(broken)
    cfg.subscribe(lambda ns, key: heard.append(key))
    cfg.set("llm_config", "model", "claude-x")
    assert cfg.get("llm_config", "model") == "claude-x"
    assert heard == ["model"]


def test_mask():
    assert mask("") == "(not set)"
    assert mask(None) == "(not set)"
    assert mask("sk-abcdefghijklmnopqrstuvwxyz") == "sk-a\u2026wxyz"
    assert mask("0123456789abcdefghij") == "0123\u2026ghij"  # at least 12 characters stay hidden
    assert mask("0123456789abcdefghi") == "****"  # under 20 characters: nothing shown
    assert mask("ab") == "****"
    assert mask("a-very-long-wifi-password", password=True) == "********"
    assert mask("", password=True) == "(not set)"


def test_shown_masks_secrets_and_lists_every_setting():
    cfg = _fresh()
    cfg.set("llm_config", "api_key", API_KEY)
    cfg.set("tg_config", "bot_token", BOT_TOKEN)
    cfg.set("wifi_config", "password", WIFI_PASSWORD)
    cfg.set("wifi_config", "ssid", "home")
    cfg.set("gw_config", "ws_token", SHORT_TOKEN)
    rows = cfg.shown()
    assert [(r[0], r[1]) for r in rows] == [(s[0], s[1]) for s in settings.SETTINGS]
    shown = dict(((r[0], r[1]), r[2]) for r in rows)
    assert shown[("llm_config", "api_key")] == "sk-a\u2026wxyz"
    assert shown[("wifi_config", "password")] == "********"
    assert shown[("gw_config", "ws_token")] == "****"
    assert shown[("wifi_config", "ssid")] == "home"
    assert shown[("llm_config", "max_tokens")] == "4096"
    assert shown[("tg_config", "allowlist")] == "(not set)"
    text = _all_text(cfg)
    for secret in (API_KEY, BOT_TOKEN, WIFI_PASSWORD, SHORT_TOKEN, "hunter2", "SECRETSECRET"):
        assert secret not in text


def test_secrets_never_appear_in_errors_or_repr():
    cfg = _fresh()
    secret = "sk-ant-" + "S" * 600
    for ns, key in (("llm_config", "api_key"), ("tg_config", "bot_token"),
                    ("wifi_config", "password"), ("gw_config", "ws_token")):
        exc = raises(ValueError, cfg.set, ns, key, secret)
        assert "SSSS" not in str(exc) and "SSSS" not in repr(exc)
        exc = raises(ValueError, cfg.set, ns, key, "sk-ant-SECRET\nX")
        assert "SECRET" not in str(exc) and "SECRET" not in repr(exc)
        exc = raises(ValueError, cfg.override, ns, key, secret)
        assert "SSSS" not in str(exc)
    cfg.set("llm_config", "api_key", API_KEY)
    cfg.override("tg_config", "bot_token", BOT_TOKEN)
    assert API_KEY not in repr(cfg) and BOT_TOKEN not in repr(cfg)


def test_settings_table_is_consistent():
    seen = []
    for ns, key, kind, default, flags, low, high, description in settings.SETTINGS:
        assert len(ns) <= 15 and len(key) <= 15
        assert (ns, key) not in seen
        seen.append((ns, key))
        assert kind in settings.KINDS
        assert description
        if kind == settings.INT:
            assert low <= default <= high
    secrets = [(s[0], s[1]) for s in settings.SETTINGS if s[4] & settings.SECRET]
    assert sorted(secrets) == sorted([("wifi_config", "password"), ("tg_config", "bot_token"),
                                      ("llm_config", "api_key"), ("gw_config", "ws_token"),
                                      ("web_config", "search_key"), ("mqtt_config", "password"),
                                      ("mcp_config", "token"), ("voice_config", "stt_key"),
                                      ("mx_config", "token"), ("dc_config", "token"),
                                      ("voice_config", "tts_key")]
                                     + [("llm_profiles", "k{}".format(n)) for n in range(1, 7)])


def test_every_setting_has_one_note_and_no_note_names_a_missing_setting():
    from mimi import table
    from mimi.settings import notes

    names = [(s[0], s[1]) for s in settings.SETTINGS]
    described = [tuple(table.fields(notes.NOTES, at)[:2]) for at in table.rows(notes.NOTES)]
    assert described == names  # the same settings, in the same order, each once
    assert notes.of("llm_config", "max_tokens") == "Most tokens in one reply"
    assert notes.of("llm_config", "nope") == ""
    assert [s[7] for s in settings._ROWS] == [None] * len(names)  # the settings' own walks load no notes


def test_a_name_with_a_tab_or_newline_never_matches_across_fields():
    cfg = _fresh()
    for ns, key in (("llm_config", "model\ttext"), ("llm_config\tmodel", "text"), ("llm_config", "model\n"),
                    ("", ""), ("llm_config", "")):
        exc = raises(KeyError, cfg.get, ns, key)
        assert str(exc).startswith("unknown setting '{}.{}'; valid settings: wifi_config.ssid, ".format(ns, key))
    assert list(settings.SETTINGS) == list(settings.SETTINGS)  # iterated again from the start


def test_a_corrupt_stored_value_falls_back_to_the_default():
    cfg = _fresh()
    nvs = esp32.NVS("llm_config")
    nvs.set_blob("max_tokens", b"lots")
    nvs.set_blob("model", b"\xff\xfe")
    nvs.commit()
    assert cfg.get("llm_config", "max_tokens") == 4096
    assert cfg.get("llm_config", "model") == "claude-sonnet-4-5"


# -- issue 41: a key follows its URL's host no more; nonsense is refused on every path --
LOCAL_KEY = "sk-or-v1-" + "k3y" * 12


def test_a_key_is_dropped_when_its_url_goes_to_another_scheme_host_or_port_and_set_says_so():
    cfg = _fresh()
    for url_key, key_key, first, same, other in (
            (("llm_profiles", "p1"), ("llm_profiles", "k1"), "lk openai http://lan-box:8080/v1 m",
             "lk openai HTTP://LAN-BOX:8080/v2 m2", "lk openai http://another-host:8080/v1 m"),
            (("llm_config", "api_base"), ("llm_config", "api_key"), "https://proxy.example",
             "https://Proxy.example:443/v1", "http://proxy.example"),
            (("tg_config", "api_base"), ("tg_config", "bot_token"), "https://api.telegram.org",
             "https://api.telegram.org:443", "https://api.telegram.org:8443"),
            (("voice_config", "stt_url"), ("voice_config", "stt_key"), "https://api.openai.com",
             "https://api.openai.com/v1", "https://api.groq.com/openai"),
            (("voice_config", "tts_url"), ("voice_config", "tts_key"), "http://tts.lan:8880",
             "http://tts.lan:8880/v1", "http://tts.lan:8881")):
        cfg.set(url_key[0], url_key[1], first.replace("HTTP", "http"))
        cfg.set(key_key[0], key_key[1], LOCAL_KEY)
        assert cfg.set(url_key[0], url_key[1], same.replace("HTTP:", "http:")) is False, url_key
        assert cfg.get(key_key[0], key_key[1]) == LOCAL_KEY, url_key  # the same origin keeps it
        assert cfg.set(url_key[0], url_key[1], other) is True, url_key  # another: dropped, and said so
        assert not cfg.is_set(key_key[0], key_key[1]), url_key
        cfg.set(key_key[0], key_key[1], LOCAL_KEY)
        assert cfg.unset(url_key[0], url_key[1]) is True and not cfg.is_set(key_key[0], key_key[1]), url_key
    cfg.set("voice_config", "stt_key", LOCAL_KEY)  # a key given before any URL stays with the first one
    assert cfg.set("voice_config", "stt_url", "https://api.openai.com") is False
    assert cfg.get("voice_config", "stt_key") == LOCAL_KEY
    assert settings.KEY_DROPPED == "key dropped: the host changed"


def test_role_settings_take_only_the_roles():
    from mimi.safety import roles

    cfg = _fresh()
    for ns, key in (("mcp_config", "role"), ("mqtt_config", "role"), ("gw_config", "ws_role"),
                    ("gw_config", "ws_open_role")):
        exc = raises(ValueError, cfg.set, ns, key, "root")
        assert str(exc) == "{}.{} must be observer, operator or owner, not 'root'".format(ns, key)
        cfg.set(ns, key, "Operator")
        assert cfg.get(ns, key) == "operator"
    exc = raises(ValueError, cfg.set, "tg_config", "roles", "42=owner,7=root")
    assert "tg_config.roles must be user ids with their roles" in str(exc)
    assert not cfg.is_set("tg_config", "roles")
    cfg.set("tg_config", "roles", "42=Owner, 7=observer")
    assert cfg.get("tg_config", "roles") == "42=owner,7=observer"
    for setting in settings.SETTINGS:  # every role setting takes the roles of safety/roles.py and no other word
        ns, key = setting[0], setting[1]
        if "role" in key:
            raises(ValueError, cfg.set, ns, key, "root" if key != "roles" else "42=root")
            for role in roles.ROLES:
                cfg.set(ns, key, role if key != "roles" else "42=" + role)


def test_url_settings_are_parsed_scheme_host_and_port():
    cfg = _fresh()
    for bad, why in (("http://[::1", "never closes it with ]"), ("http://[::1/v1", "never closes it with ]"),
                     ("http://[fe80::1::2]/", "not an IPv6 address"), ("http://h:0/v1", "port"),
                     ("http://h:65536", "port"), ("http://h:8o/", "port"), ("http://h:/", "port"),
                     ("http://1.2.3.256/", "IPv4"), ("http://user:pw@h/", "user or password"),
                     ("http:///v1", "no host"), ("http://a..b/", "empty"), ("ftp://h", "https:// or http://"),
                     ("http://h/a b", "without spaces"), ("http://h\u00e9.com/", "not a name")):
        for ns, key in (("llm_config", "api_base"), ("voice_config", "stt_url"), ("tg_config", "api_base")):
            exc = raises(ValueError, cfg.set, ns, key, bad)
            assert why in str(exc) and bad not in str(exc), (bad, str(exc))
        if " " not in bad:  # a profile's words are split at spaces
            exc = raises(ValueError, cfg.set, "llm_profiles", "p1", "e3 openai {} m".format(bad))
            assert why in str(exc) and "the URL" in str(exc) and bad not in str(exc), (bad, str(exc))
    assert not cfg.is_set("llm_profiles", "p1") and not cfg.is_set("voice_config", "stt_url")
    for good in ("http://[::1]:8080/v1", "https://API.openai.com/v1", "http://192.168.1.20:11434/v1",
                 "http://my_box/v1?x=1", "http://[::ffff:10.0.0.1]/", "https://h:65535"):
        cfg.set("voice_config", "stt_url", good)
        cfg.set("llm_profiles", "p1", "e3 openai {} m".format(good))


def test_a_key_in_a_setting_that_is_not_secret_is_refused_and_never_quoted():
    cfg = _fresh()
    for key in ("sk-proj-" + "Ab1" * 8, "sk-ant-api03-" + "x" * 20, "AIzaSyA-" + "b" * 20, "ghp_" + "c1" * 10,
                "eyJhbGciOiJIUzI1NiJ9.payload-0123", "123456789:AAH" + "d4" * 16, "q7W" * 11):
        for ns, key_name, value in (("llm_config", "model", key), ("voice_config", "stt_model", key),
                                    ("llm_profiles", "p1", "typo openai http://host/v1 " + key),
                                    ("mqtt_config", "device_id", key)):
            exc = raises(ValueError, cfg.set, ns, key_name, value)
            assert "looks like a key" in str(exc) and key[3:] not in str(exc) and key[3:] not in repr(exc), key
            assert not cfg.is_set(ns, key_name)
    for fine in ("claude-sonnet-4-5-20250929", "qwen2.5-coder:32b-instruct-q4_K_M", "anthropic/claude-3.5-haiku",
                 "meta-llama/Llama-3.3-70B-Instruct-Turbo", "whisper-large-v3-turbo", "gpt-4o-mini-2024-07-18"):
        cfg.set("llm_config", "model", fine)
        assert cfg.get("llm_config", "model") == fine
    cfg.set("llm_config", "api_key", "sk-ant-api03-" + "x" * 20)  # a secret setting takes it, of course


def test_the_gateway_token_off_is_shown_as_off_on_every_surface_that_shows_settings():
    cfg = _fresh()
    cfg.set("gw_config", "ws_token", "OFF")
    shown = dict(((r[0], r[1]), r[2]) for r in cfg.shown())
    assert shown[("gw_config", "ws_token")] == "off"  # a word, not a secret
    cfg.set("gw_config", "ws_token", "offoffoff")
    shown = dict(((r[0], r[1]), r[2]) for r in cfg.shown())
    assert shown[("gw_config", "ws_token")] == "****"  # a token that starts like the word is still one
    assert mask("off", words="off") == "off" and mask("off") == "****"


def test_the_pages_set_of_a_name_holding_a_tab_or_a_newline_is_refused_and_changes_nothing():
    import json

    from stub_app import stub_app
    from support import run

    from mimi.gateway import views

    app = stub_app("views-set")
    try:
        for name in ("llm_config.model\tx", "llm_config.model\tgw_config.ws_role", "llm_config.model\nx", "LLM_CONFIG.model",
                     "llm_config.mod'el", "llm_config", "llm_config.model.x"):
            answer = json.loads(run(views.answer(app, "set", {"name": name, "value": "y"})))
            assert answer["ok"] is False and answer["text"].startswith("error: no such setting"), (name, answer)
            assert not app.config.is_set("llm_config", "model"), name
        answer = json.loads(run(views.answer(app, "set", {"name": "llm_config.model", "value": "claude-x"})))
        assert answer == {"type": "set", "ok": True, "name": "llm_config.model",
                          "text": "llm_config.model = claude-x (saved; in effect now)"}
        app.config.set("llm_config", "api_base", "https://proxy.example")
        app.config.set("llm_config", "api_key", LOCAL_KEY)
        answer = json.loads(run(views.answer(app, "set", {"name": "llm_config.api_base", "value": "https://x.example"})))
        assert answer["text"] == "llm_config.api_base = https://x.example (saved; in effect now); " \
                                 "key dropped: the host changed"
        assert not app.config.is_set("llm_config", "api_key")
        app.config.set("llm_config", "api_key", LOCAL_KEY)  # the page's Reset: the default is another host
        answer = json.loads(run(views.answer(app, "set", {"name": "llm_config.api_base", "value": " "})))
        assert answer["text"].endswith("(the default; saved, in effect now); key dropped: the host changed")
        assert not app.config.is_set("llm_config", "api_key")
    finally:
        remove_tree(app.top)

