# The built-in tools sent from data (builtin_defs.py) and their code imported at the first call: the
# definitions the model sees are byte-identical to the tools' own, and a tool still runs as before.
import json
import sys

from support import raises, remove_tree, run, tempdir

from mimi.llm import claude_tools
from mimi.llm.claude import JsonBody
from mimi.tools import loading
from mimi.tools.builtin_defs import DEFS
from mimi.tools.lazy_tool import LazyTool
from mimi.tools.loading import LAZY, load_builtins
from mimi.tools.tool_check import check_tool
from mimi.tools.registry import Registry
from mimi.tools.turn import console


class _App:
    pass


# CPython's dicts keep the literals' key order, as the encoded definitions do; MicroPython's iterate by hash,
# so there its dict form encodes the same JSON with the keys in another order.
_ORDERED = list({"b": 0, "a": 0}) == ["b", "a"]


def _real_tools():
    for module_name in LAZY:
        module = __import__(module_name, None, None, ["_"])
        tools = getattr(module, "TOOLS", None)
        for tool in tools if tools is not None else (module,):
            yield module_name, tool


def _eager_definitions():
    saved = loading.LAZY
    loading.LAZY = ()
    try:
        eager = Registry()
        load_builtins(eager)
    finally:
        loading.LAZY = saved
    return eager


def _rows():  # DEFS's lines: (name, module, tier, acting, level, definition)
    for line in DEFS.split(b"\n")[1:-1]:
        head = line[: line.index(b"\t{")].decode().split("\t")
        yield head[0], head[1], head[2], head[3] == "1", head[4], line[line.index(b"\t{") + 1 :]


def test_each_definition_is_the_tools_own():  # else: python tools/tool_defs.py
    real = list(_real_tools())
    assert DEFS.startswith(b"\n") and DEFS.endswith(b"\n")
    assert [(entry[0], entry[1]) for entry in _rows()] == [(tool.name, module) for module, tool in real]
    for entry, (module, tool) in zip(_rows(), real):
        name, _, tier, acting, level, definition = entry
        assert (tier, acting, level) == (tool.tier, tool.acting, tool.level), name
        assert json.loads(definition) == {"name": name, "description": tool.description, "input_schema": tool.schema}
        if _ORDERED:  # the bytes the dict form gives, keys in the modules' order
            assert definition == json.dumps(
                {"name": name, "description": tool.description, "input_schema": tool.schema}).encode(), name


def _joined(definition):  # a LazyTool's chunks, as net/http writes them
    return b"".join(bytes(chunk) for chunk in definition.chunks())


def _decoded(definition):
    return definition if isinstance(definition, dict) else json.loads(_joined(definition))


def _flat(pieces):  # as net/http writes them: a piece with chunks() is written chunk by chunk
    for piece in pieces:
        yield _joined(piece) if hasattr(piece, "chunks") else piece


def _request(tools):
    body = JsonBody("soul", [{"role": "user", "content": "hi"}], tools, "claude-x", 1024)
    return b"".join(_flat(body.pieces()))


def test_the_definitions_sent_are_byte_identical_to_the_eager_ones():
    lazy = Registry()
    load_builtins(lazy)
    sent, eager = lazy.definitions(), _eager_definitions().definitions()
    read_file = sent[[d["name"] for d in eager].index("read_file")]
    assert read_file is lazy.tools["read_file"] and len(read_file) == len(_joined(read_file))  # kept encoded
    assert all(isinstance(chunk, memoryview) for d in sent for chunk in d.chunks())  # views: nothing copied
    assert [_decoded(d) for d in sent] == eager  # one at a time: the unit tests' MicroPython heap is small
    if _ORDERED:
        assert _request(sent) == _request(eager)
    assert isinstance(lazy.tools["read_file"], LazyTool) and isinstance(lazy.tools["web_search"], LazyTool)
    assert not lazy.warnings


def test_a_lazy_tool_decodes_its_description_and_schema_when_asked():
    eager = _eager_definitions()
    lazy = Registry()
    load_builtins(lazy)
    assert sorted(lazy.tools) == sorted(eager.tools)
    for name, tool in lazy.tools.items():
        assert check_tool(eager.tools[name]) is None, name  # the real tool a LazyTool stands for
        assert tool.description == eager.tools[name].description, name
        assert tool.schema == eager.tools[name].schema, name
    text, is_error = run(lazy.execute("read_file", {"offset": 1}, console()))
    assert is_error and text == "invalid input for read_file: missing required field 'path'"


def _files_form(folder):
    """DEFS as the .mpy bundle ships it (tools/tool_defs.py files_form): each definition moved to a file,
    its line keeping "@offset,length"; (table, file path)."""
    path, heads, offset = folder + "/builtin_defs.jsonl", bytearray(), 0
    with open(path, "wb") as f:
        for line in DEFS.split(b"\n")[1:-1]:
            at = line.index(b"\t{") + 1
            heads += b"\n" + line[:at] + b"@%d,%d" % (offset, len(line) - at)
            offset += f.write(memoryview(line)[at:]) + f.write(b"\n")
    return bytes(heads + b"\n"), path


def test_the_files_form_sends_and_decodes_the_same_definitions_from_flash():
    from mimi.tools import builtin_defs

    kept = Registry()
    load_builtins(kept)
    want = {}  # what the tools kept in DEFS give (they read DEFS when asked: taken before it changes)
    for name, tool in kept.tools.items():
        want[name] = (_joined(tool), tool.description, tool.schema, [bytes(p) for p in tool.schema_parts()],
                      (tool.tier, tool.acting, tool.level))
    sent = _request(kept.definitions()) if _ORDERED else None
    folder = tempdir("defs")
    saved = builtin_defs.DEFS, builtin_defs.FILE
    try:
        builtin_defs.DEFS, builtin_defs.FILE = _files_form(folder)
        assert len(builtin_defs.DEFS) < len(saved[0]) // 4  # what stays in the module: the lines' heads
        read = Registry()
        load_builtins(read)
        assert sorted(read.tools) == sorted(want)
        for name, tool in read.tools.items():
            chunks = list(tool.chunks())  # read from the file, in slices
            assert all(isinstance(c, bytes) and len(c) <= 256 for c in chunks), name
            assert len(tool) == len(want[name][0]) and b"".join(chunks) == want[name][0], name
            assert (tool.description, tool.schema) == want[name][1:3], name
            assert [bytes(p) for p in tool.schema_parts()] == want[name][3], name
            assert (tool.tier, tool.acting, tool.level) == want[name][4], name
        if _ORDERED:
            assert _request(read.definitions()) == sent
        with open(builtin_defs.FILE, "wb") as f:  # a file cut short (a torn copy): a clear error, naming it
            f.write(b'{"name": "get_current_time"')
        exc = raises(OSError, lambda: list(read.tools["get_current_time"].chunks()))
        assert "definitions are cut short: " + builtin_defs.FILE in str(exc)
    finally:
        builtin_defs.DEFS, builtin_defs.FILE = saved
        remove_tree(folder)


class _Config:
    def __init__(self, **settings):
        self.settings = settings

    def get(self, ns, key):
        return self.settings.get(key)

    def is_set(self, ns, key):
        return key in self.settings


def test_the_server_tools_take_the_encoded_definitions_in_the_registrys_order():
    lazy = Registry()
    load_builtins(lazy)
    device = lazy.definitions()
    names = [_decoded(d)["name"] for d in device]
    assert names == sorted(names) and "web_search" in names and "web_fetch" in names
    tools = claude_tools.definitions(_Config(search_mode="server", server_fetch=1, search_max_uses=3), device)
    sent = [_decoded(t) for t in tools]
    assert [t["name"] for t in sent] == names
    assert [t.get("type") for t in sent if "type" in t] == [claude_tools.FETCH_TYPE, claude_tools.SEARCH_TYPE]
    if _ORDERED:
        assert json.loads(_request(tools))["tools"] == sent
    assert claude_tools.has_server_tools(tools) and claude_tools.beta_header(tools) == claude_tools.FETCH_BETA
    assert not claude_tools.has_server_tools(device) and claude_tools.beta_header(device) is None
    assert claude_tools.definitions(_Config(search_mode="device"), device) == device


def test_the_safety_facts_are_the_tools_own():
    eager = _eager_definitions()
    lazy = Registry()
    load_builtins(lazy)
    for name, tool in eager.tools.items():
        facts = (lazy.tools[name].tier, lazy.tools[name].acting, lazy.tools[name].level)
        assert facts == (tool.tier, tool.acting, tool.level), name


def test_the_code_is_imported_and_set_up_at_the_first_call_only():
    saved = {name: sys.modules.pop(name) for name in ("mimi.tools.clock", "mimi.tools.files") if name in sys.modules}
    try:
        app = _App()
        tools = Registry(app)
        load_builtins(tools, ["mimi.tools.clock", "mimi.tools.files"])
        assert "mimi.tools.clock" not in sys.modules and "mimi.tools.files" not in sys.modules
        assert "utc" in run(tools.execute("get_current_time", {}, console()))[0]
        assert "mimi.tools.clock" in sys.modules and "mimi.tools.files" not in sys.modules
        read = tools.code("mimi.tools.files", "read_file")
        assert read.name == "read_file" and read.app is app  # bound to the app by the registry
        assert tools.code("mimi.tools.files", "list_dir").name == "list_dir"
        assert sorted(tools._bound) == ["mimi.tools.clock", "mimi.tools.files"]  # each set up once
        assert tools.code("mimi.tools.files", "read_file") is read
    finally:
        sys.modules.update(saved)


class _Recorder:
    def __init__(self):
        self.console, self.commands, self.added, self.table = self, self, [], {}

    def add_lines(self, text, module=None):  # the names channels/commands.py adds (test_commands.py runs one)
        for line in text.split("\n")[1:-1]:
            fields = line.split("\t")
            if module is None or fields[5].startswith(module + ":"):
                self.table[fields[0]] = None


def test_the_lazy_console_commands_are_the_modules_own():  # else: python tools/tool_defs.py
    from mimi.tools.builtin_defs import COMMANDS

    own = "".join(__import__(name, None, None, ["_"]).COMMANDS[:-1] for name in loading.LAZY_COMMANDS) + "\n"
    assert COMMANDS == own
    for line in COMMANDS.split("\n")[1:-1]:
        target = line.split("\t")[5]
        module_name, _, function = target.partition("(")[0].partition(":")
        assert module_name in loading.LAZY_COMMANDS, line  # add_commands(module) finds its own lines
        assert callable(getattr(__import__(module_name, None, None, ["_"]), function)), line


def test_the_memory_hook_is_added_at_boot_and_memory_tools_imported_only_when_used():
    from mimi.storage.sessions import Sessions

    lazy = ("mimi.tools.memory_tools", "mimi.tools.web", "mimi.agent.consolidate")
    saved = {name: sys.modules.pop(name) for name in lazy if name in sys.modules}
    try:
        app = _Recorder()
        app.agent = _App()
        app.agent.after_turn = []
        app.sessions = Sessions("no_such_dir")
        tools = Registry(app)
        load_builtins(tools, ["mimi.tools.memory_tools", "mimi.tools.web"])
        assert sorted(app.table) == ["memory_consolidate", "set_search", "set_search_key"]
        assert len(app.agent.after_turn) == 1
        run(app.agent.after_turn[0](None, None, ("system", "cron")))  # consolidate skips system turns
        assert not [name for name in lazy if name in sys.modules]
        assert tools.code("mimi.tools.memory_tools", "recall").name == "recall"
        assert len(app.agent.after_turn) == 1  # its setup adds no second hook
        assert tools.code("mimi.tools.memory_tools", "recall").app is app
    finally:
        sys.modules.update(saved)
