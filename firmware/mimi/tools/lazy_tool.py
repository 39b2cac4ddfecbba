# Built-in tools held as data: a line of builtin_defs.DEFS each, their code imported at the first call.
import json

from mimi.platform import const

_SAFETY_FIELDS = const(3)  # tier, acting, level: a line's fields between its module and its definition


def _defs():  # imported at the first lazy built-in: tools/tool_defs.py imports the registry to write it
    from mimi.tools.builtin_defs import DEFS

    return DEFS


def add_lazy(registry, module_name):
    """The module's tools from their lines in DEFS: name, module, tier, acting, level, definition."""
    defs = _defs()
    key = "\t{}\t".format(module_name).encode()
    at = defs.find(key)
    while at >= 0:
        definition = at + len(key)
        for _ in range(_SAFETY_FIELDS):  # after tier, acting and level
            definition = defs.find(b"\t", definition) + 1
        registry.add(LazyTool(registry, definition))
        at = defs.find(key, definition)


class Encoded:
    """A tool held as its request definition, encoded (is_json: llm/claude.py writes its chunks() as they
    are); description and schema decoded from it when asked (a call's input check, tool_list)."""

    is_json = True

    def _decoded(self):  # the definition as a dict: each kind of tool reads its own bytes
        raise NotImplementedError

    @property
    def description(self):
        return self._decoded()["description"]

    @property
    def schema(self):
        return self._decoded()["input_schema"]


class LazyTool(Encoded):
    """A built-in tool held as data: its line in builtin_defs.DEFS, a bytes constant that stays in flash on a
    ROMFS board; the tool keeps only where its definition starts. It is its own request definition
    (is_json, len(), chunks(): a view of the JSON in DEFS, written as llm/claude.py writes a PromptFile);
    description and schema are decoded from it when asked (a call's input check, the tool_list command).
    The registry runs code(): the real tool, its module imported and set up at the first call."""

    def __init__(self, registry, at):  # at: where its definition starts in DEFS
        self._registry, self._at = registry, at

    def _fields(self):  # [name, module, tier, acting, level], the line's head
        defs = _defs()
        return defs[defs.rfind(b"\n", 0, self._at) + 1 : self._at - 1].decode().split("\t")

    @property
    def name(self):  # made when asked: a str kept per tool costs heap (the registry's key is one)
        defs = _defs()
        start = defs.rfind(b"\n", 0, self._at) + 1
        return defs[start : defs.find(b"\t", start)].decode()

    @property
    def tier(self):  # [safety] the least trusted role that may run it (safety/roles.py)
        return self._fields()[2]

    @property
    def acting(self):  # [safety] does it change the world (the circuit breaker counts it)
        return self._fields()[3] == "1"

    @property
    def level(self):  # [safety] its default autonomy level (safety/policy.py LEVELS)
        return self._fields()[4]

    def __len__(self):
        return _defs().find(b"\n", self._at) - self._at

    def chunks(self):  # a view of the constant: nothing copied
        defs = _defs()
        return (memoryview(defs)[self._at : defs.find(b"\n", self._at)],)

    def _span(self):  # (bytes, start, end) of its definition (llm/openai_request.py: a function from it)
        defs = _defs()
        return defs, self._at, defs.find(b"\n", self._at)

    def _decoded(self):
        defs = _defs()
        return json.loads(defs[self._at : defs.find(b"\n", self._at)])

    def code(self):
        """The real tool, bound to the app: its module imported and set up at the first call (registry.code)."""
        name, module = self._fields()[:2]
        return self._registry.code(module, name)
