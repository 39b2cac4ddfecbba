# The firmware's shape, kept: no import circle inside firmware/mimi, no private name used across files, its console
# lines through platform.log; read from the source tree itself with a small reader that works under MicroPython too
# (no ast there).
import os

import mimi

_DIR = 0x4000  # stat mode bit of a folder


def _firmware_root():
    package = mimi.__file__.replace("\\", "/").rsplit("/", 2)[0]  # .../firmware
    return package


def _modules(root):
    """{dotted module name: path} of every .py file under root/mimi."""
    found, folders = {}, ["mimi"]
    while folders:
        folder = folders.pop()
        for name in os.listdir(root + "/" + folder):
            path = "{}/{}/{}".format(root, folder, name)
            if os.stat(path)[0] & _DIR:
                folders.append(folder + "/" + name)
            elif name.endswith(".py"):
                dotted = (folder + "/" + name[:-3]).replace("/", ".")
                found[dotted[:-9] if dotted.endswith(".__init__") else dotted] = path
    return found


def _statements(path):
    """(line number, text) of each import statement of a file, lazy ones inside functions included, a
    parenthesised one joined; also __import__("mimi....") with a literal name."""
    in_text, number, joined = False, 0, None
    with open(path) as f:
        for line in f:  # a line at a time: the MicroPython unit heap is small
            number += 1
            line = line.strip()
            if joined is not None:  # inside a parenthesised import
                joined += " " + line
                if ")" in line:
                    yield number, joined.split("#")[0].replace("(", " ").replace(")", " ")
                    joined = None
                continue
            if line.count('"""') % 2 == 1:
                in_text = not in_text
                continue
            if in_text or line.startswith("#"):
                continue
            if line.startswith("import ") or (line.startswith("from ") and " import " in line):
                if line.endswith("("):
                    joined = line
                    continue
                yield number, line.split("#")[0]
        at = line.find('__import__("')
        if at >= 0:
            name = line[at + 12:line.find('"', at + 12)]
            yield number, "import " + name


def _imports(path, modules):
    """(line, imported module, name taken from it or None, alias) for each firmware module a file imports."""
    for number, text in _statements(path):
        words = text.split()
        if words[0] == "import":
            for part in " ".join(words[1:]).split(","):
                bits = part.split()
                if bits and bits[0] in modules:
                    yield number, bits[0], None, bits[-1] if len(bits) == 3 else None
            continue
        source = words[1]
        for part in " ".join(words[3:]).split(","):
            bits = part.split()
            if not bits:
                continue
            name, alias = bits[0], bits[-1]
            if source + "." + name in modules:
                yield number, source + "." + name, None, alias  # a module taken from its package
            elif source in modules:
                yield number, source, name, alias


def _graph():
    root = _firmware_root()
    modules = _modules(root)
    # Sized while the heap is whole, and each edge names its module with the key's own str (no copy read
    # from a line left behind): on the small unit heap, kept small strs scattered among the garbage of
    # reading left no hole for the larger dicts after.
    names = {module: module for module in modules}
    edges = {module: None for module in modules}
    for module, path in modules.items():
        edges[module] = [names[found[1]] for found in _imports(path, modules) if found[1] != module]
    return modules, edges


def _circle_through(start, edges):
    """A path start -> ... -> start along the edges, or None."""
    parents, frontier = {}, [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in edges.get(node, ()):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, node, start]
                if nxt not in parents:
                    parents[nxt] = node
                    following.append(nxt)
        frontier = following
    return None


def test_no_import_circle_inside_firmware_mimi():
    modules, edges = _graph()
    assert len(modules) > 100 and "mimi.tools.lazy_tool" in edges["mimi.tools.registry"]  # it sees the tree
    assert "mimi.tools.turn" in edges["mimi.agent.loop"]  # and the imports inside functions
    circles = []
    for module in sorted(modules):
        circle = _circle_through(module, edges)
        if circle is not None and sorted(circle[:-1])[0] == module:  # each circle once, from its least name
            circles.append(" -> ".join(circle))
    assert circles == [], "import circles:\n" + "\n".join(circles)


def test_the_circle_finder_finds_a_circle():
    edges = {"a": ["b"], "b": ["c"], "c": ["a", "d"], "d": []}
    assert _circle_through("a", edges) == ["a", "b", "c", "a"]
    assert _circle_through("d", edges) is None
    assert _circle_through("x", {"x": ["x"]}) is not None


def test_no_private_name_is_used_across_files():
    modules = _modules(_firmware_root())
    found = []
    for module, path in sorted(modules.items()):
        aliases = []
        for number, source, name, alias in _imports(path, modules):
            if source == module:
                continue
            if name is not None and name.startswith("_"):
                found.append("{}:{} imports {} from {}".format(module, number, name, source))
            elif name is None and alias:
                aliases.append(alias)
            elif name is None:
                aliases.append(source)
        with open(path) as f:
            for number, line in enumerate(f):
                for alias in aliases:
                    at = line.find(alias + "._")
                    while at >= 0:
                        before, after = line[at - 1] if at else " ", line[at + len(alias) + 2:at + len(alias) + 3]
                        if not (before.isalpha() or before.isdigit() or before in "_.") and after != "_":
                            found.append("{}:{} uses {}".format(module, number + 1, line[at:].split("(")[0].strip()))
                        at = line.find(alias + "._", at + 1)
    assert found == [], "private names used across files:\n" + "\n".join(found)


def test_the_firmware_prints_its_lines_through_platform_log():
    # A bare print lands inside a reply the console is streaming; platform.log gives the line a line of its own.
    found = []
    for module, path in sorted(_modules(_firmware_root()).items()):
        if module == "mimi.platform":
            continue
        with open(path) as f:
            for number, line in enumerate(f):
                if line.lstrip().startswith("print(") and "# bare print:" not in line:
                    found.append("{}:{}".format(module, number + 1))
    assert found == [], "print instead of platform.log:\n" + "\n".join(found)


def _code_lines(path):
    """(line number, text without its comment, indent) of each line of code, docstrings skipped."""
    in_text = False
    with open(path) as f:
        for number, line in enumerate(f):
            stripped = line.strip()
            if stripped.count('"""') % 2 == 1:
                in_text = not in_text
                continue
            if in_text or not stripped or stripped.startswith("#") or stripped.startswith('"""'):
                continue
            yield number + 1, line.split("  #")[0].rstrip(), len(line) - len(line.lstrip())


def test_no_constructor_registers_itself():
    # The wiring is app.py's: a constructor that hands itself to the app (app.add_channel(self),
    # app.channels[...] = self, app.bus.rules = self) is a seam running backwards.
    found = []
    for module, path in sorted(_modules(_firmware_root()).items()):
        inside = None  # the indent of the __init__ being read
        for number, line, indent in _code_lines(path):
            if inside is not None and indent <= inside:
                inside = None
            if line.lstrip().startswith("def __init__("):
                inside = indent
            elif inside is not None and "app." in line and (line.endswith("= self") or "(self)" in line
                                                            or "(self," in line):
                found.append("{}:{}: {}".format(module, number, line.strip()))
    assert found == [], "constructors that register themselves:\n" + "\n".join(found)


def test_no_hasattr_probe_on_a_channel():
    # What a channel can do is the Channel base's (channels/__init__.py): send, streams, confirm.
    found = []
    for module, path in sorted(_modules(_firmware_root()).items()):
        for number, line, _ in _code_lines(path):
            for probe in ("hasattr(", "getattr("):
                at = line.find(probe)
                while at >= 0:
                    first = line[at + len(probe):].split(",")[0]
                    if "channel" in first or first.strip() in ("ch", "target"):
                        found.append("{}:{}: {}".format(module, number, line.strip()))
                    at = line.find(probe, at + 1)
    assert found == [], "hasattr/getattr probes on channels:\n" + "\n".join(found)


def test_the_bus_imports_nothing_of_the_layers_it_carries_for():
    # The bus carries messages: it knows no rules (watch/), no channel and no agent.
    modules = _modules(_firmware_root())
    found = []
    for module, path in sorted(modules.items()):
        if not module.startswith("mimi.bus"):
            continue
        for number, source, _, _ in _imports(path, modules):
            if not (source.startswith("mimi.bus") or source in ("mimi.platform", "mimi")):
                found.append("{}:{} imports {}".format(module, number, source))
    assert found == [], "\n".join(found)


def test_one_reader_of_the_tab_separated_tables():
    # Settings, console commands and built-in tools are rows of tab-separated fields: mimi/table.py reads them
    # all; no other module looks for a tab.
    found = []
    for module, path in sorted(_modules(_firmware_root()).items()):
        if module == "mimi.table":
            continue
        for number, line, _ in _code_lines(path):
            for needle in ('find("\\t', 'find(b"\\t', 'split("\\t', 'split(b"\\t', 'index("\\t', 'index(b"\\t',
                           'partition("\\t', 'partition(b"\\t'):
                if needle in line:
                    found.append("{}:{}: {}".format(module, number, line.strip()))
    assert found == [], "tables read outside mimi/table.py:\n" + "\n".join(found)


def _is_name_char(c):
    return c.isalpha() or c.isdigit() or c == "_"


def _uses(line, name):
    at = line.find(name)
    while at >= 0:
        end = at + len(name)
        if (not at or not _is_name_char(line[at - 1])) and (end >= len(line) or not _is_name_char(line[end])):
            return True
        at = line.find(name, end)
    return False


def _python_files(top):
    folders, found = [top], []
    while folders:
        folder = folders.pop()
        for name in os.listdir(folder):
            path = folder + "/" + name
            if name.startswith(".") or name == "__pycache__":
                continue
            if os.stat(path)[0] & _DIR:
                folders.append(path)
            elif name.endswith(".py"):
                found.append(path)
    return found


def test_every_public_const_is_used_by_another_file():
    # On MicroPython a public const() name stays in its module's globals (heap); a _NAME one is folded away.
    root = _firmware_root()
    repo = root.rsplit("/", 1)[0] if "/" in root else "."  # MicroPython's module paths may be relative
    defined = {}  # name: the file that defines it
    for path in _modules(root).values():
        with open(path) as f:
            for line in f:
                name = line.split("=")[0].strip()
                if "= const(" in line and name and not line[0].isspace() and not name.startswith("_"):
                    defined[name] = path
    assert len(defined) > 50, "found the constants"
    waiting = set(defined)
    for top in ("firmware", "tests", "tools", "bench", "host_sim"):
        for path in _python_files(repo + "/" + top):
            mine = [name for name in waiting if defined[name].rsplit("/", 1)[1] == path.rsplit("/", 1)[1]]
            with open(path) as f:
                for line in f:
                    for name in [name for name in waiting if name in line]:
                        if name not in mine and _uses(line, name):
                            waiting.discard(name)
            if not waiting:
                break
    found = sorted("{}: {}".format(defined[name], name) for name in waiting)
    assert found == [], "public const() names no other file uses (make them _NAME):\n" + "\n".join(found)
