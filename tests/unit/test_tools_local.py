# Local built-in tools: file sandbox, read/write/edit/list, memory, clock, system_info, GPIO.
import os

import esp32
import network
from support import raises, read, remove_tree, run, tempdir, write

from mimi import platform
from mimi.channels.commands import Commands
from mimi.settings import Config
from mimi.net.wifi import WiFi
from mimi.storage.layout import Flash
from mimi.storage.memory import MEMORY_MAX_BYTES, Memory
from mimi.storage.sessions import Sessions
from mimi.tools import clock, gpio, memory_tools, sandbox, system
from mimi.tools import files as file_tools
from mimi.tools.loading import load_builtins
from mimi.tools.registry import Registry, ToolError
from mimi.tools.registry import run as run_tool
from mimi.tools.turn import Turn, console

MODULES = ("mimi.tools.clock", "mimi.tools.files", "mimi.tools.memory_tools", "mimi.tools.system",
           "mimi.tools.gpio")


class _Holder:
    pass


def _app():
    """An App-shaped object built from the real storage, config, WiFi and console command table."""
    esp32.set_flash_dir(None)
    network._reset()
    top = tempdir("tools")
    app = _Holder()
    app.top = top
    app.started_ms = platform.ticks_ms()
    app.config = Config()
    app.flash = Flash(top + "/data")
    app.flash.seed()
    app.memory = Memory(app.flash)
    app.sessions = Sessions(app.flash.sessions_dir)
    app.wifi = WiFi(app.config)
    app.agent = _Holder()
    app.agent.turns = 3
    app.agent.failures = 1
    app.models = _Holder()
    app.models.answered = None  # no turn answered yet (llm/models.py)
    app.outputs = {}  # the pins the tools drive (app.py)
    app.console = _Holder()
    app.console.commands = Commands(app, app.console)
    app.console.commands.add_lines(gpio.COMMANDS)  # as at boot (builtin_defs.COMMANDS)
    app.turn = console()  # the turn the tools run for: the owner on the console, unless a test says otherwise
    return app


def _done(app):
    remove_tree(app.top)


class _Bound:
    """A built-in tool made with the app as the registry makes it, run for the app's current test turn."""

    def __init__(self, app, tool):
        self.app, self.tool = app, tool

    def run(self, input):
        return run_tool(self.tool, input, self.app.turn)


def _tool(app, module, name):
    for tool in module.TOOLS:
        if tool.name == name:
            return _Bound(app, tool(app))
    raise AssertionError("no tool " + name)


def _read(app, path, **extra):
    extra["path"] = path
    return _tool(app, file_tools, "read_file").run(extra)


def _write(app, path, content):
    return _tool(app, file_tools, "write_file").run({"path": path, "content": content})


def _edit(app, path, old, new):
    return _tool(app, file_tools, "edit_file").run({"path": path, "old_string": old, "new_string": new})


def _list(app, path=None):
    return _tool(app, file_tools, "list_dir").run({} if path is None else {"path": path})


ESCAPES = ("../x", "/etc/passwd", "a/../../x", "config/../../nvs.json", "certs/x.der", "../nvs.json",
           "config\\..\\..\\nvs.json", "config/SOUL.md\x00.txt", "nvs.json", "/data/../nvs.json", "..")


def test_path_escapes_are_refused_by_every_file_tool():
    app = _app()
    try:
        write(app.top + "/nvs.json", '{"llm_config": "SECRET"}')
        files_dir = app.flash.root + "/files"
        os.mkdir(files_dir)
        for path in ESCAPES:
            for call in (
                lambda: _read(app, path),
                lambda: _write(app, path, "x"),
                lambda: _edit(app, path, "SECRET", "y"),
                lambda: _list(app, path),
            ):
                err = raises(ToolError, call)
                assert "refused" in str(err), (path, str(err))
                assert "SECRET" not in str(err)
        err = raises(ToolError, _read, app, "certs/x.der")
        assert "TLS certificates" in str(err)
        err = raises(ToolError, _read, app, "/etc/passwd")
        assert "absolute" in str(err) and "files/" in str(err) and "memory/" in str(err)
        assert read(app.top + "/nvs.json") == '{"llm_config": "SECRET"}'
        assert os.listdir(files_dir) == []  # nothing was written by the refused calls
    finally:
        _done(app)


def test_links_are_not_followed_where_the_filesystem_has_them():
    if not hasattr(os, "symlink"):  # LittleFS and the MicroPython unix port: no links to follow
        return
    app = _app()
    outside = tempdir("outside")
    links = (app.flash.config_dir + "/link.md", app.flash.memory_dir + "/up")
    try:
        write(outside + "/secret.txt", "SECRET")
        os.symlink(outside + "/secret.txt", links[0])
        os.symlink(outside, links[1])
        for path in ("config/link.md", "memory/up/secret.txt"):
            err = raises(ToolError, _read, app, path)
            assert "link" in str(err) and "SECRET" not in str(err)
        raises(ToolError, _write, app, "memory/up/secret.txt", "overwritten")
        assert read(outside + "/secret.txt") == "SECRET"
    finally:
        for link in links:
            if os.path.islink(link):
                os.remove(link)
        remove_tree(outside)
        _done(app)


def test_sessions_are_readable_but_not_writable():
    app = _app()  # the owner's turn
    try:
        app.sessions.append("telegram", 42, "user", "hello there")
        names = _list(app, "sessions").split("\n")
        assert len(names) == 1 and names[0].startswith("telegram_42")
        name = names[0].split(" ")[0]
        assert "hello there" in _read(app, "sessions/" + name)
        err = raises(ToolError, _write, app, "sessions/" + name, "forged")
        assert "read-only" in str(err)
        err = raises(ToolError, _edit, app, "sessions/" + name, "hello", "bye")
        assert "read-only" in str(err)
        assert "hello there" in read(app.flash.sessions_dir + "/" + name)
        # Anyone but the owner is refused everyone's chat histories, listing included.
        app.turn = Turn("telegram", "7", {"user_id": 7, "role": "operator"}, "operator")
        err = raises(ToolError, _read, app, "sessions/" + name)
        assert "only the owner may read conversations" in str(err)
        assert "(sessions/, files/inbox/, memory/, config/USER.md)" in str(err)
        assert "only the owner" in str(raises(ToolError, _list, app, "sessions"))
        assert "memory/" in _list(app, "")  # the rest is as before
    finally:
        _done(app)


def test_the_chip_path_of_a_file_is_accepted():
    app = _app()
    try:
        assert _read(app, "/data/config/SOUL.md") == read(app.flash.soul_path)
        assert _read(app, "./config//SOUL.md") == read(app.flash.soul_path)
    finally:
        _done(app)


def test_write_creates_folders_and_replaces_atomically():
    app = _app()
    try:
        assert _write(app, "files/lists/shopping.md", "milk\n") == (
            "wrote 5 bytes to files/lists/shopping.md (new file)")
        assert _write(app, "files/lists/shopping.md", "milk\neggs\n").endswith("(replaced)")
        assert read(app.flash.root + "/files/lists/shopping.md") == "milk\neggs\n"
        assert "files/lists/shopping.md.tmp" not in _list(app, "files/lists")
        _write(app, "HEARTBEAT.md", "- [ ] water the plants\n")
        assert read(app.flash.root + "/HEARTBEAT.md") == "- [ ] water the plants\n"
        err = raises(ToolError, _write, app, "files", "x")
        assert "folder" in str(err)
        err = raises(ToolError, _write, app, "cron.json", "[]")
        assert "not one of the allowed places" in str(err)
    finally:
        _done(app)


def test_write_size_caps():
    app = _app()
    try:
        _write(app, "files/big.txt", "a" * file_tools.WRITE_MAX)
        err = raises(ToolError, _write, app, "files/big.txt", "b" * (file_tools.WRITE_MAX + 1))
        assert "limit" in str(err)
        assert read(app.flash.root + "/files/big.txt") == "a" * file_tools.WRITE_MAX
        before = read(app.flash.memory_path)
        raises(ToolError, _write, app, "memory/MEMORY.md", "m" * (MEMORY_MAX_BYTES + 1))
        assert read(app.flash.memory_path) == before
    finally:
        _done(app)


def test_read_pages_through_a_long_file_on_character_boundaries():
    app = _app()
    try:
        text = "\u00e9t\u00e9 " * 3000  # 2-byte characters: pages must not split them
        os.mkdir(app.flash.root + "/files")
        write(app.flash.root + "/files/long.txt", text)
        total = len(text.encode())
        pieces, offset = [], 0
        while True:
            out = _read(app, "files/long.txt", offset=offset)
            body, note = out.rsplit("\n[bytes ", 1)
            assert len(body.encode()) <= file_tools.READ_MAX
            pieces.append(body)
            if "end of file" in note:
                break
            offset = int(note.split("offset=")[1].split(" ")[0])
        assert "".join(pieces) == text
        assert len(pieces) == (total + file_tools.READ_MAX - 1) // file_tools.READ_MAX
        small = _read(app, "files/long.txt", offset=1, limit=5)  # starts inside a character
        assert small.startswith("t\u00e9 ") and "[bytes 2-6 of {}".format(total) in small
        assert _read(app, "files/long.txt", limit=10 ** 9).count("\u00e9") <= file_tools.READ_MAX // 2
        assert "past the end" in str(raises(ToolError, _read, app, "files/long.txt", offset=total + 1))
        assert "no file" in str(raises(ToolError, _read, app, "files/none.txt"))
        assert "folder" in str(raises(ToolError, _read, app, "memory"))
    finally:
        _done(app)


def test_edit_replaces_exactly_one_unique_occurrence():
    app = _app()
    try:
        _write(app, "files/todo.md", "- buy milk\n- call mum\n- buy bread\n")
        assert _edit(app, "files/todo.md", "call mum", "call dad").startswith("edited files/todo.md")
        assert read(app.flash.root + "/files/todo.md") == "- buy milk\n- call dad\n- buy bread\n"
        err = raises(ToolError, _edit, app, "files/todo.md", "- buy", "- get")
        assert "2 times" in str(err)
        err = raises(ToolError, _edit, app, "files/todo.md", "call Mum", "x")
        assert "not found" in str(err)
        raises(ToolError, _edit, app, "files/todo.md", "", "x")
        raises(ToolError, _edit, app, "files/missing.md", "a", "b")
        assert read(app.flash.root + "/files/todo.md") == "- buy milk\n- call dad\n- buy bread\n"
        _edit(app, "files/todo.md", "- buy milk\n", "- buy oat milk\n")
        assert read(app.flash.root + "/files/todo.md").startswith("- buy oat milk\n- call dad")
        err = raises(ToolError, _edit, app, "files/todo.md", "- call dad", "x" * file_tools.WRITE_MAX)
        assert "limit" in str(err)
    finally:
        _done(app)


def test_list_dir_shows_the_allowed_places_only():
    app = _app()
    try:
        _write(app, "NOTES.md", "hi")
        root = _list(app).split("\n")
        assert "config/" in root and "memory/" in root and "skills/" not in root
        assert "sessions/  (read only)" in root
        assert "files/  (empty; created when you write into it)" in root
        assert "NOTES.md  2 bytes" in root
        assert not [line for line in root if "certs" in line]
        memory = _list(app, "memory").split("\n")
        assert "daily/" in memory
        assert "MEMORY.md  {} bytes".format(os.stat(app.flash.memory_path)[6]) in memory
        os.mkdir(app.flash.root + "/files")
        for i in range(file_tools.LIST_MAX + 5):
            write("{}/files/f{:03d}".format(app.flash.root, i), "")
        many = _list(app, "files").split("\n")
        assert len(many) == file_tools.LIST_MAX + 1 and many[-1] == "... and 5 more"
        assert "is a file" in str(raises(ToolError, _list, app, "NOTES.md"))
        assert "no folder" in str(raises(ToolError, _list, app, "skills"))
    finally:
        _done(app)


def test_remember_then_recall_with_sources():
    app = _app()
    try:
        remember = _tool(app, memory_tools, "remember")
        recall = _tool(app, memory_tools, "recall")
        note = _tool(app, memory_tools, "note_today")
        out = remember.run({"text": "Owner's  favourite\ncolour is teal"})
        today = platform.utc_date()
        assert out == "saved to MEMORY.md: - [{}] Owner's favourite colour is teal".format(today)
        note.run({"text": "Dentist at 15:00, bring the teal card"})
        hits = recall.run({"query": "TEAL"}).split("\n")
        assert hits == [
            "MEMORY.md: - [{}] Owner's favourite colour is teal".format(today),
            "daily/{}.md: Dentist at 15:00, bring the teal card".format(today),
        ]
        assert "favourite colour" in recall.run({"query": "what colour does he like"})
        assert recall.run({"query": "bicycle"}).startswith("nothing found for 'bicycle'")
        raises(ToolError, remember.run, {"text": "   "})
        raises(ToolError, recall.run, {"query": " "})
        write(app.flash.memory_path, "x" * MEMORY_MAX_BYTES)
        assert "full" in str(raises(ToolError, remember.run, {"text": "one more"}))
    finally:
        _done(app)


def test_current_time_is_utc_and_consistent():
    before = platform.unix_time()
    out = clock.run({})
    after = platform.unix_time()
    assert before <= out["unix"] <= after and out["timezone"] == "UTC"
    assert out["utc"].startswith(platform.utc_date(out["unix"]) + "T") and out["utc"].endswith("Z")
    assert clock.iso_utc(1741528800) == "2025-03-09T14:00:00Z"
    assert clock.iso_utc(0) == "1970-01-01T00:00:00Z"
    assert out["weekday"] == clock.weekday(out["unix"])
    assert clock.weekday(1741528800) == "Sunday" and clock.weekday(0) == "Thursday"
    assert clock.weekday(1741478399) == "Saturday"  # 2025-03-08T23:59:59Z
    assert "warning" not in out  # the laptop's clock is set


def test_system_info_reports_the_board():
    app = _app()
    try:
        info = _tool(app, system, "system_info").run({})
        assert info["firmware"].startswith("MimiClaw-Py ")
        assert 0 <= info["uptime_s"] < 60
        assert info["model"] == "claude-sonnet-4-5"
        assert info["wifi"]["connected"] and info["wifi"]["rssi_dbm"] < 0
        assert info["agent_turns"] == 3 and info["agent_failures"] == 1
        if hasattr(os, "statvfs"):
            assert 0 < info["flash_free"] <= info["flash_total"]
        network.simulate(drop_link=True)
        assert _tool(app, system, "system_info").run({})["wifi"] == {"connected": False}
    finally:
        network._reset()
        _done(app)


def test_gpio_needs_the_owners_allowance():
    app = _app()
    try:
        read_pin, write_pin = _tool(app, gpio, "gpio_read"), _tool(app, gpio, "gpio_write")
        err = raises(ToolError, write_pin.run, {"pin": 4, "value": 1})
        assert "gpio_allow 4" in str(err)
        run(app.console.commands.execute("gpio_allow 4"))
        run(app.console.commands.execute("gpio_allow 2"))
        assert app.config.get("tool_config", "gpio_allow") == "2,4"
        assert write_pin.run({"pin": 4, "value": 1}) == {"pin": 4, "value": 1}
        assert read_pin.run({"pin": 4}) == {"pin": 4, "value": 1, "mode": "output"}
        write_pin.run({"pin": 4, "value": 0})
        assert read_pin.run({"pin": 4})["value"] == 0
        assert read_pin.run({"pin": 2, "pull": "up"})["mode"] == "input"
        run(app.console.commands.execute("gpio_deny 4"))
        assert app.config.get("tool_config", "gpio_allow") == "2"
        assert "gpio_allow 4" in str(raises(ToolError, read_pin.run, {"pin": 4}))
    finally:
        _done(app)


def test_gpio_reserved_and_missing_pins_are_refused():
    app = _app()
    try:
        for pin in (19, 20, 26, 32, 35, 43, 23, 49):
            run(app.console.commands.execute("gpio_allow {}".format(pin)))
            assert app.config.get("tool_config", "gpio_allow") == ""
        app.config.set("tool_config", "gpio_allow", "19,30")  # set by hand with config_set
        err = raises(ToolError, _tool(app, gpio, "gpio_write").run, {"pin": 19, "value": 1})
        assert "reserved for USB" in str(err)
        err = raises(ToolError, _tool(app, gpio, "gpio_read").run, {"pin": 30})
        assert "flash" in str(err)
        assert "does not exist" in str(raises(ToolError, _tool(app, gpio, "gpio_read").run, {"pin": 24}))
    finally:
        _done(app)


def test_the_registry_loads_these_tools_and_reports_refusals_as_errors():
    app = _app()
    try:
        registry = Registry(app)
        load_builtins(registry, MODULES)
        assert registry.warnings == []
        names = [d["name"] if isinstance(d, dict) else d.name for d in registry.definitions()]
        assert names == ["edit_file", "get_current_time", "gpio_read", "gpio_write", "list_dir",
                         "note_today", "read_file", "recall", "remember", "system_info", "write_file"]
        text, is_error = run(registry.execute("read_file", {"path": "../nvs.json"}, console()))
        assert is_error and text.startswith("path '../nvs.json' refused")
        text, is_error = run(registry.execute("read_file", {"path": "config/USER.md"}, console()))
        assert not is_error and text == read(app.flash.user_path)
        text, is_error = run(registry.execute("gpio_write", {"pin": 4, "value": 2}, console()))
        assert is_error and "one of 0, 1" in text
        assert "gpio_allow" in app.console.commands.names()
        assert sandbox.allowed_text().startswith("config/, memory/, skills/, files/")
    finally:
        _done(app)
