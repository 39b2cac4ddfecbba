# Local built-in tools: file sandbox, read/write/edit/list, memory, clock, system_info, GPIO.
import json
import os

import esp32
import network
from support import raises, read, remove_tree, run, tempdir, write

from mimi import platform
from mimi.channels.commands import Commands
from mimi.config import Config
from mimi.net.wifi import WiFi
from mimi.storage.layout import Flash
from mimi.storage.memory import MEMORY_MAX_BYTES, Memory
from mimi.storage.sessions import Sessions
from mimi.tools import clock, gpio, memory_tools, sandbox, system
from mimi.tools import files as file_tools
from mimi.tools.loading import load_builtins
from mimi.tools.registry import Registry, ToolError

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
    app.console = _Holder()
    app.console.commands = Commands(app, app.console)
    for module in (file_tools, memory_tools, system, gpio):
        module.setup(app)
    return app


def _done(app):
    remove_tree(app.top)


def _tool(module, name):
    for tool in module.TOOLS:
        if tool.name == name:
            return tool
    raise AssertionError("no tool " + name)


def _read(path, **extra):
    extra["path"] = path
    return _tool(file_tools, "read_file").run(extra)


def _write(path, content):
    return _tool(file_tools, "write_file").run({"path": path, "content": content})


def _edit(path, old, new):
    return _tool(file_tools, "edit_file").run({"path": path, "old_string": old, "new_string": new})


def _list(path=None):
    return _tool(file_tools, "list_dir").run({} if path is None else {"path": path})


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
                lambda: _read(path),
                lambda: _write(path, "x"),
                lambda: _edit(path, "SECRET", "y"),
                lambda: _list(path),
            ):
                err = raises(ToolError, call)
                assert "refused" in str(err), (path, str(err))
                assert "SECRET" not in str(err)
        err = raises(ToolError, _read, "certs/x.der")
        assert "TLS certificates" in str(err)
        err = raises(ToolError, _read, "/etc/passwd")
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
            err = raises(ToolError, _read, path)
            assert "link" in str(err) and "SECRET" not in str(err)
        raises(ToolError, _write, "memory/up/secret.txt", "overwritten")
        assert read(outside + "/secret.txt") == "SECRET"
    finally:
        for link in links:
            if os.path.islink(link):
                os.remove(link)
        remove_tree(outside)
        _done(app)


def test_sessions_are_readable_but_not_writable():
    from mimi.tools import registry

    app = _app()
    registry.current.clear()
    registry.current.update({"channel": "cli", "chat_id": "console", "meta": None})  # the owner
    try:
        app.sessions.append("telegram", 42, "user", "hello there")
        names = _list("sessions").split("\n")
        assert len(names) == 1 and names[0].startswith("telegram_42")
        name = names[0].split(" ")[0]
        assert "hello there" in _read("sessions/" + name)
        err = raises(ToolError, _write, "sessions/" + name, "forged")
        assert "read-only" in str(err)
        err = raises(ToolError, _edit, "sessions/" + name, "hello", "bye")
        assert "read-only" in str(err)
        assert "hello there" in read(app.flash.sessions_dir + "/" + name)
        # Anyone but the owner is refused everyone's chat histories, listing included.
        registry.current.update({"channel": "telegram", "chat_id": "7", "meta": {"user_id": 7, "role": "operator"}})
        err = raises(ToolError, _read, "sessions/" + name)
        assert "only the owner may read conversations (sessions/)" in str(err)
        assert "only the owner" in str(raises(ToolError, _list, "sessions"))
        assert "memory/" in _list("")  # the rest is as before
    finally:
        registry.current.clear()
        _done(app)


def test_the_chip_path_of_a_file_is_accepted():
    app = _app()
    try:
        assert _read("/data/config/SOUL.md") == read(app.flash.soul_path)
        assert _read("./config//SOUL.md") == read(app.flash.soul_path)
    finally:
        _done(app)


def test_write_creates_folders_and_replaces_atomically():
    app = _app()
    try:
        assert _write("files/lists/shopping.md", "milk\n") == (
            "wrote 5 bytes to files/lists/shopping.md (new file)")
        assert _write("files/lists/shopping.md", "milk\neggs\n").endswith("(replaced)")
        assert read(app.flash.root + "/files/lists/shopping.md") == "milk\neggs\n"
        assert "files/lists/shopping.md.tmp" not in _list("files/lists")
        _write("HEARTBEAT.md", "- [ ] water the plants\n")
        assert read(app.flash.root + "/HEARTBEAT.md") == "- [ ] water the plants\n"
        err = raises(ToolError, _write, "files", "x")
        assert "folder" in str(err)
        err = raises(ToolError, _write, "cron.json", "[]")
        assert "not one of the allowed places" in str(err)
    finally:
        _done(app)


def test_write_size_caps():
    app = _app()
    try:
        _write("files/big.txt", "a" * file_tools.WRITE_MAX)
        err = raises(ToolError, _write, "files/big.txt", "b" * (file_tools.WRITE_MAX + 1))
        assert "limit" in str(err)
        assert read(app.flash.root + "/files/big.txt") == "a" * file_tools.WRITE_MAX
        before = read(app.flash.memory_path)
        raises(ToolError, _write, "memory/MEMORY.md", "m" * (MEMORY_MAX_BYTES + 1))
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
            out = _read("files/long.txt", offset=offset)
            body, note = out.rsplit("\n[bytes ", 1)
            assert len(body.encode()) <= file_tools.READ_MAX
            pieces.append(body)
            if "end of file" in note:
                break
            offset = int(note.split("offset=")[1].split(" ")[0])
        assert "".join(pieces) == text
        assert len(pieces) == (total + file_tools.READ_MAX - 1) // file_tools.READ_MAX
        small = _read("files/long.txt", offset=1, limit=5)  # starts inside a character
        assert small.startswith("t\u00e9 ") and "[bytes 2-6 of {}".format(total) in small
        assert _read("files/long.txt", limit=10 ** 9).count("\u00e9") <= file_tools.READ_MAX // 2
        assert "past the end" in str(raises(ToolError, _read, "files/long.txt", offset=total + 1))
        assert "no file" in str(raises(ToolError, _read, "files/none.txt"))
        assert "folder" in str(raises(ToolError, _read, "memory"))
    finally:
        _done(app)


def test_edit_replaces_exactly_one_unique_occurrence():
    app = _app()
    try:
        _write("files/todo.md", "- buy milk\n- call mum\n- buy bread\n")
        assert _edit("files/todo.md", "call mum", "call dad").startswith("edited files/todo.md")
        assert read(app.flash.root + "/files/todo.md") == "- buy milk\n- call dad\n- buy bread\n"
        err = raises(ToolError, _edit, "files/todo.md", "- buy", "- get")
        assert "2 times" in str(err)
        err = raises(ToolError, _edit, "files/todo.md", "call Mum", "x")
        assert "not found" in str(err)
        raises(ToolError, _edit, "files/todo.md", "", "x")
        raises(ToolError, _edit, "files/missing.md", "a", "b")
        assert read(app.flash.root + "/files/todo.md") == "- buy milk\n- call dad\n- buy bread\n"
        _edit("files/todo.md", "- buy milk\n", "- buy oat milk\n")
        assert read(app.flash.root + "/files/todo.md").startswith("- buy oat milk\n- call dad")
        err = raises(ToolError, _edit, "files/todo.md", "- call dad", "x" * file_tools.WRITE_MAX)
        assert "limit" in str(err)
    finally:
        _done(app)


def test_list_dir_shows_the_allowed_places_only():
    app = _app()
    try:
        _write("NOTES.md", "hi")
        root = _list().split("\n")
        assert "config/" in root and "memory/" in root and "skills/" not in root
        assert "sessions/  (read only)" in root
        assert "files/  (empty; created when you write into it)" in root
        assert "NOTES.md  2 bytes" in root
        assert not [line for line in root if "certs" in line]
        memory = _list("memory").split("\n")
        assert "daily/" in memory
        assert "MEMORY.md  {} bytes".format(os.stat(app.flash.memory_path)[6]) in memory
        os.mkdir(app.flash.root + "/files")
        for i in range(file_tools.LIST_MAX + 5):
            write("{}/files/f{:03d}".format(app.flash.root, i), "")
        many = _list("files").split("\n")
        assert len(many) == file_tools.LIST_MAX + 1 and many[-1] == "... and 5 more"
        assert "is a file" in str(raises(ToolError, _list, "NOTES.md"))
        assert "no folder" in str(raises(ToolError, _list, "skills"))
    finally:
        _done(app)


def test_remember_then_recall_with_sources():
    app = _app()
    try:
        remember = _tool(memory_tools, "remember")
        recall = _tool(memory_tools, "recall")
        note = _tool(memory_tools, "note_today")
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
        info = system.run({})
        assert info["firmware"].startswith("MimiClaw-Py ")
        assert 0 <= info["uptime_s"] < 60
        assert info["model"] == "claude-sonnet-4-5"
        assert info["wifi"]["connected"] and info["wifi"]["rssi_dbm"] < 0
        assert info["agent_turns"] == 3 and info["agent_failures"] == 1
        if hasattr(os, "statvfs"):
            assert 0 < info["flash_free"] <= info["flash_total"]
        network.simulate(drop_link=True)
        assert system.run({})["wifi"] == {"connected": False}
    finally:
        network._reset()
        _done(app)


def test_gpio_needs_the_owners_allowance():
    app = _app()
    try:
        read_pin, write_pin = _tool(gpio, "gpio_read"), _tool(gpio, "gpio_write")
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
        err = raises(ToolError, _tool(gpio, "gpio_write").run, {"pin": 19, "value": 1})
        assert "reserved for USB" in str(err)
        err = raises(ToolError, _tool(gpio, "gpio_read").run, {"pin": 30})
        assert "flash" in str(err)
        assert "does not exist" in str(raises(ToolError, _tool(gpio, "gpio_read").run, {"pin": 24}))
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
        text, is_error = run(registry.execute("read_file", {"path": "../nvs.json"}))
        assert is_error and text.startswith("path '../nvs.json' refused")
        text, is_error = run(registry.execute("read_file", {"path": "config/USER.md"}))
        assert not is_error and text == read(app.flash.user_path)
        text, is_error = run(registry.execute("gpio_write", {"pin": 4, "value": 2}))
        assert is_error and "one of 0, 1" in text
        assert "gpio_allow" in app.console.commands.table
        assert sandbox.allowed_text().startswith("config/, memory/, skills/, files/")
    finally:
        _done(app)
