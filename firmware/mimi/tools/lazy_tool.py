# Built-in tools held as data: a line of builtin_defs.DEFS each, their code imported at the first call.
import json

from mimi import table
from mimi.jsontext import Streamed
from mimi.platform import const

_SCHEMA_KEY = b'"input_schema": '  # a definition's key as the Messages API names it
_DEFINITION_FIELD = const(5)  # a line's fields: name, module, tier, acting, level, then the definition
# The .mpy files form keeps the definitions in a data file beside builtin_defs (its FILE; tools/bundle.py): a
# line's definition field is then "@offset,length" there, read from flash while a request is written.
_IN_FILE = const(64)  # b"@"[0]
_READ_SLICE = const(256)  # bytes of a definition read from its file at a time


def _defs():  # imported at the first lazy built-in: tools/tool_defs.py imports the registry to write it
    from mimi.tools.builtin_defs import DEFS

    return DEFS


def _in_file(defs, at):
    """(offset, length) in builtin_defs.FILE of a definition the files form moved there; None: it is in DEFS."""
    if defs[at] != _IN_FILE:
        return None
    offset, length = defs[at + 1 : table.end(defs, at)].split(b",")
    return int(offset), int(length)


def _read(offset, length):
    """A definition from builtin_defs.FILE, in slices (a short or missing file is an OSError naming it)."""
    from mimi.tools import builtin_defs

    with open(builtin_defs.FILE, "rb") as f:
        f.seek(offset)
        while length > 0:
            data = f.read(min(length, _READ_SLICE))
            if not data:
                raise OSError("the built-in tools' definitions are cut short: " + builtin_defs.FILE)
            length -= len(data)
            yield data


def add_lazy(registry, module_name):
    """The module's tools from their lines in DEFS: name, module, tier, acting, level, definition."""
    defs = _defs()
    for at in table.rows(defs):
        if table.has(defs, at, 1, module_name):
            registry.add(LazyTool(registry, table.skip(defs, at, _DEFINITION_FIELD)))


class Encoded(Streamed):
    """A tool held as its request definition, encoded (is_json: a request writes its chunks() as they are);
    description and schema decoded from it when asked (a call's input check, tool_list)."""

    is_json = True

    def decoded(self):  # the definition as a dict: each kind of tool reads its own bytes
        raise NotImplementedError

    def _span(self):  # (bytes, start, end) of its definition: each kind of tool keeps its own
        raise NotImplementedError

    def schema_parts(self):
        """(head, tail): views of the definition before its one top-level "input_schema" key and after it (the
        schema and the closing brace), for a wire that names the key its own way (MCP's inputSchema, an OpenAI
        function's parameters) with nothing copied; None for a definition not in the encoder's layout. Name
        and description come first, strings whose quotes are escaped: the key's first match is the key."""
        data, start, end = self._span()
        at = data.find(_SCHEMA_KEY, start, end)
        if at < 0:
            return None
        view = memoryview(data)
        return view[start:at], view[at + len(_SCHEMA_KEY):end]

    @property
    def description(self):
        return self.decoded()["description"]

    @property
    def schema(self):
        return self.decoded()["input_schema"]


class LazyTool(Encoded):
    """A built-in tool held as data: its line in builtin_defs.DEFS, a bytes constant that stays in flash on a
    ROMFS board; the tool keeps only where its definition starts. It is its own request definition
    (is_json, len(), chunks(): a view of the JSON in DEFS, written as llm/claude.py writes a PromptFile);
    description and schema are decoded from it when asked (a call's input check, the tool_list command).
    The registry runs code(): the real tool, its module imported and set up at the first call."""

    def __init__(self, registry, at):  # at: where its definition starts in DEFS
        self._registry, self._at = registry, at

    def _field(self, index):  # 0 name, 1 module, 2 tier, 3 acting, 4 level: the line's head
        defs = _defs()
        return table.field(defs, table.start(defs, self._at), index).decode()

    @property
    def name(self):  # made when asked: a str kept per tool costs heap (the registry's key is one)
        return self._field(0)

    @property
    def tier(self):  # [safety] the least trusted role that may run it (safety/roles.py)
        return self._field(2)

    @property
    def acting(self):  # [safety] does it change the world (the circuit breaker counts it)
        return self._field(3) == "1"

    @property
    def level(self):  # [safety] its default autonomy level (safety/policy.py LEVELS)
        return self._field(4)

    def __len__(self):
        defs = _defs()
        where = _in_file(defs, self._at)
        return where[1] if where else table.end(defs, self._at) - self._at

    def chunks(self):  # a view of the constant, nothing copied; the files form's read from flash in slices
        defs = _defs()
        where = _in_file(defs, self._at)
        return _read(*where) if where else (memoryview(defs)[self._at : table.end(defs, self._at)],)

    def _span(self):
        defs = _defs()
        where = _in_file(defs, self._at)
        if where:  # read whole: a definition is under 2.5 KB, and this is for the rarer wires and checks
            data = b"".join(_read(*where))
            return data, 0, len(data)
        return defs, self._at, table.end(defs, self._at)

    def decoded(self):
        data, start, end = self._span()
        return json.loads(data[start:end])

    def code(self):
        """The real tool, bound to the app: its module imported and set up at the first call (registry.code)."""
        return self._registry.code(self._field(1), self._field(0))
