# Small-board mode: chosen from the heap at boot or by system.small_board, shown by status, what it changes.
import esp32
from mimi import board
from mimi.settings import Config
from mimi.llm import claude_tools
from mimi.net import tls
from support import raises, remove_tree, tempdir


def _config(setting=None):
    esp32.set_flash_dir(None)
    cfg = Config()
    if setting is not None:
        cfg.set("system", "small_board", setting)
    return cfg


def _roomy():
    board.choose(_config(), heap=2 * 1024 * 1024)  # later tests in the same process see the default


def test_auto_is_small_under_512_kb_of_heap_and_roomy_from_there():
    try:
        assert board.choose(_config(), heap=300 * 1024) is True  # an ESP32-S3 without PSRAM
        assert board.small()
        assert board.describe().startswith("small (heap 300 KB, under 512 KB; auto): one TLS session at a time")
        assert board.choose(_config(), heap=512 * 1024) is False
        assert board.choose(_config(), heap=8 * 1024 * 1024) is False  # with PSRAM
        assert board.describe() == "roomy (heap 8192 KB, not under 512 KB; auto)"
    finally:
        _roomy()


def test_the_setting_overrides_the_heap_and_applies_at_once():
    try:
        cfg = _config("on")
        assert board.follow(cfg) is True
        board.choose(cfg, heap=4096 * 1024)
        assert board.small() and "set on" in board.describe()
        cfg.set("system", "small_board", "OFF")  # config_set: words in any case, stored as the table's
        assert cfg.get("system", "small_board") == "off"
        assert not board.small()
        board.choose(cfg, heap=200 * 1024)
        assert not board.small() and board.describe() == "roomy (heap 200 KB; set off)"
        cfg.set("system", "small_board", "auto")
        assert board.small()
    finally:
        _roomy()


def test_a_wrong_word_is_refused_like_other_settings():
    cfg = _config()
    exc = raises(ValueError, cfg.set, "system", "small_board", "maybe")
    assert str(exc) == "system.small_board must be on, off or auto, not 'maybe'"
    assert cfg.get("system", "small_board") == "auto"
    assert ("system", "small_board", "auto") in cfg.shown()


def test_server_search_is_off_by_default_on_a_small_board_unless_chosen():
    cfg = _config()
    try:
        board.choose(cfg, heap=300 * 1024)
        assert claude_tools.mode(cfg) == claude_tools.OFF  # its results come as 64 KB lines
        cfg.set("web_config", "search_mode", "server")
        assert claude_tools.mode(cfg) == claude_tools.SERVER
    finally:
        _roomy()
    cfg.set("web_config", "search_mode", "")
    assert claude_tools.mode(cfg) == claude_tools.SERVER  # a roomy board's default is unchanged


def test_the_ca_certificates_of_the_host_reached_only():
    assert tls.roots_of("api.telegram.org") == ["godaddy_root_g2"]
    assert tls.roots_of("api.anthropic.com") == ["gts_root_r1", "gts_root_r4"]
    tls.configure(["firmware/certs", "/nonexistent-owner-certs"])
    assert tls.roots_of("example.org") is None  # not named: every certificate, for that connection only
    try:
        shipped = list(tls._der_files(tls.roots_of("api.telegram.org")))
        assert shipped == ["firmware/certs/godaddy_root_g2.der"]
        assert len(list(tls._der_files())) == 11
    finally:
        tls.configure([])


def test_a_host_refusing_its_named_roots_gets_every_certificate_after():
    try:
        board.choose(_config(), heap=300 * 1024)
        assert tls.widen("example.org") is False  # every certificate already: nothing more to try
        assert tls.widen("api.telegram.org") is True  # http.request asks once more
        assert tls.roots_of("api.telegram.org") is None
    finally:
        tls._widened[:] = []
        _roomy()
    assert tls.widen("api.anthropic.com") is False  # a roomy board's one context holds them all already


def test_a_host_not_named_tries_the_owners_certificates_alone_first():
    owner = tempdir("certs")
    with open(owner + "/my_ca.der", "wb") as f:
        f.write(b"0")
    tls.configure(["firmware/certs", owner])
    try:
        board.choose(_config(), heap=300 * 1024)
        assert tls.roots_of("nas.local") == []  # a server of the owner's: their CA, not the 11 shipped
        assert list(tls._der_files([])) == [owner + "/my_ca.der"]
        assert tls.widen("nas.local") is True  # refused: a public site after all
        assert tls.roots_of("nas.local") is None and len(list(tls._der_files())) == 12
    finally:
        tls._widened[:] = []
        tls.configure([])
        remove_tree(owner)
        _roomy()
