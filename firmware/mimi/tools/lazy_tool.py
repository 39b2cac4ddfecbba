# Built-in tools held as data: a line of builtin_defs.DEFS each, their code imported at the first call.
import json


def _defs():  # imported at the first lazy built-in: tools/tool_defs.py imports the registry to write it
    from mimi.tools.builtin_defs import DEFS

    return DEFS


def add_lazy(registry, module_name):
    """The module's tools from their lines in DEFS: name, module, tier, acting, definition."""
    defs = _defs()
    key = "\t{}\t".format(module_name).encode()
    at = defs.find(key)
    while at >= 0:
        definition = defs.find(b"\t", defs.find(b"\t", at + len(key)) + 1) + 1  # after tier and acting
        registry.add(LazyTool(registry, definition))
        at = defs.find(key, definition)


class LazyTool:
    """A built-in tool held as data: its line in builtin_defs.DEFS, a bytes constant that stays in flash on a
    ROMFS board; the tool keeps only where its definition starts. It is its own request definition
    (is_json, len(), chunks(): a view of the JSON in DEFS, written as llm/claude.py writes a PromptFile);
    description and schema are decoded from it when asked (a call's input check, the tool_list command).
    run() imports and sets up the module with the code at the first call, then hands every call to the
    real tool."""

    is_json = True

    def __init__(self, registry, at):  # at: where its definition starts in DEFS
        self._registry, self._at = registry, at

    def _fields(self):  # [name, module, tier, acting], the line's head
        defs = _defs()
        return defs[defs.rfind(b"\n", 0, self._at) + 1 : self._at - 1].decode().split("\t")

    @property
    def name(self):  # made when asked: a str kept per tool costs heap (the registry's key is one)
        defs = _defs()
        start = defs.rfind(b"\n", 0, self._at) + 1
        return defs[start : defs.find(b"\t", start)].decode()

    @property
    def tier(self):
        return self._fields()[2] or None

    @property
    def acting(self):
        return self._fields()[3] == "1"

    def __len__(self):
        return _defs().find(b"\n", self._at) - self._at

    def chunks(self):  # a view of the constant: nothing copied
        defs = _defs()
        return (memoryview(defs)[self._at : defs.find(b"\n", self._at)],)

    def _decoded(self):
        defs = _defs()
        return json.loads(defs[self._at : defs.find(b"\n", self._at)])

    @property
    def description(self):
        return self._decoded()["description"]

    @property
    def schema(self):
        return self._decoded()["input_schema"]

    def run(self, input):  # the real run()'s result: a value, or a coroutine the caller awaits
        name, module = self._fields()[:2]
        return self._registry.code(module, name).run(input)
