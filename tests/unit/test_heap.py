# The heap's policy (mimi/heap.py): code a package declares in its LET_GO is let go when the last open scope of its
# kind closes, in any task; on a tight heap only, for the kinds a roomy board keeps; never while another of its kinds
# is open, never while a module that stays keeps it at its top level; and a module nobody declares is never let go.
import sys

import asyncio
from support import raises, run

from mimi import heap

_PACKAGE = "heap_fixture"


def _load(*stems):
    for stem in stems:
        __import__(_PACKAGE + "." + stem)


def _loaded(stem):
    return _PACKAGE + "." + stem in sys.modules


def _clean():
    for name in [n for n in sys.modules if n.startswith(_PACKAGE + ".")]:
        heap.forget(name)
    _tight(False)  # as the other tests find it


def _tight(flag):
    heap.choose(1024 * 1024 if flag else 8 * 1024 * 1024)


def test_a_scope_lets_its_modules_go_when_the_last_of_its_kind_closes_in_any_task():
    _tight(True)
    try:
        async def task(started, release):
            with heap.scope("call"):
                started.set()
                await release.wait()

        async def main():
            _load("in_call", "in_tool", "at_boot", "not_declared")
            started, release = asyncio.Event(), asyncio.Event()
            other = asyncio.create_task(task(started, release))
            await started.wait()
            with heap.scope("call"):
                pass  # closed while the other task's call is open: nothing goes
            assert _loaded("in_call") and heap.is_open("call")
            release.set()
            await other
            assert not heap.is_open("call")
            assert not _loaded("in_call")  # the last call closed
            assert _loaded("in_tool") and _loaded("at_boot") and _loaded("not_declared")  # other kinds, undeclared

        run(main())
        with heap.scope("tool"):
            _load("in_call")
        assert not _loaded("in_tool") and _loaded("in_call")  # each kind its own modules
        with heap.scope("boot"):
            pass
        assert not _loaded("at_boot") and _loaded("not_declared")  # a module nobody declares is never let go
    finally:
        _clean()


def test_a_roomy_heap_keeps_what_a_tight_one_lets_go_but_code_run_once_goes_on_every_board():
    _tight(False)
    try:
        _load("in_call", "at_boot")
        with heap.scope("call"):
            pass
        assert _loaded("in_call")  # kept for the next call
        with heap.scope("boot"):
            pass
        assert not _loaded("at_boot")  # "always": the boot's code is never wanted again
    finally:
        _clean()


def test_a_module_used_by_two_kinds_waits_for_both():
    _tight(True)
    try:
        _load("in_both")
        with heap.scope("tool"):
            with heap.scope("call"):
                pass
            assert _loaded("in_both")  # the tool round still runs
        assert not _loaded("in_both")
    finally:
        _clean()


def test_a_module_kept_at_the_top_level_of_one_that_stays_waits_for_its_holder():
    _tight(True)
    try:
        for kept, holder in (("kept_by_name", "holder_of_name"), ("kept_by_closure", "holder_of_closure")):
            _load(kept, holder)
            with heap.scope("call"):
                pass
            assert _loaded(kept), kept  # unloading it would leave the holder its copy and the next import a second
            heap.forget(_PACKAGE + "." + holder)
            with heap.scope("call"):
                pass
            assert not _loaded(kept), kept
    finally:
        _clean()


def test_a_scope_of_an_unknown_kind_is_refused():
    assert "no scope kind" in str(raises(ValueError, heap.scope, "lunch"))


# -- the firmware's own declarations, read from its source tree --

def _firmware():
    import mimi

    return mimi.__file__.replace("\\", "/").rsplit("/", 2)[0]  # .../firmware


def _packages(root):
    """Every package under root/mimi, dotted."""
    import os

    found, folders = [], ["mimi"]
    while folders:
        folder = folders.pop()
        found.append(folder.replace("/", "."))
        for name in os.listdir(root + "/" + folder):
            path = "{}/{}/{}".format(root, folder, name)
            if os.stat(path)[0] & 0x4000 and _exists(path + "/__init__.py"):
                folders.append(folder + "/" + name)
    return sorted(found)


def _exists(path):
    import os

    try:
        os.stat(path)
        return True
    except OSError:
        return False


def _declarations():
    """{module: [scope, ...]} of every package's LET_GO."""
    found = {}
    for package in _packages(_firmware()):
        module = __import__(package, None, None, ["_"])
        for entry in getattr(module, "LET_GO", "").split():
            stem, _, kinds = entry.partition(":")
            found[package if stem == "." else package + "." + stem] = kinds.split(",")
    return found


def _path(root, name):
    base = root + "/" + name.replace(".", "/")
    return base + "/__init__.py" if _exists(base + "/__init__.py") else base + ".py"


def test_every_module_declared_may_be_let_go_exists_and_names_known_scopes():
    root = _firmware()
    declared = _declarations()
    assert len(declared) > 20, declared  # the model clients, the tools, consolidation, the boot's parts ...
    for name, kinds in declared.items():
        assert _exists(_path(root, name)), name
        for kind in kinds:
            assert " {}:".format(kind) in heap.SCOPES, (name, kind)
    assert "mimi.heap" not in declared and "mimi.settings" not in declared  # the policy and the settings stay


_EMPTY = ("[]", "{}", "dict(", "list(", "set(", "bytearray(", "memoryview(")  # made at its top level to be filled


def state_kept(path):
    """The first line of a module that keeps state at its top level: an empty container or a buffer bound there
    (a cache, a registry, a table filled later), a `global` statement (a function that rebinds a top-level name),
    or a call made at import (a registration, a hook); None. A table written out whole is a constant."""
    number = 0
    with open(path) as f:
        in_text = False
        for line in f:
            number += 1
            text = line.rstrip()
            if text.strip().count('"""') % 2 == 1:
                in_text = not in_text
                continue
            if in_text or not text or text.lstrip().startswith("#"):
                continue
            if text.lstrip().startswith("global "):
                return number, text
            if text[0] in " \t)]}'\"" or text.startswith(("def ", "class ", "import ", "from ", "@", "async def ")):
                continue
            name, eq, value = text.partition("=")
            if eq and "(" not in name and not value.startswith("="):
                value = value.split("#")[0].strip()
                if value.startswith(_EMPTY):
                    return number, text
            elif "(" in text.split("=")[0]:
                return number, text  # a call at import: a registration, a hook
    return None


def test_a_module_that_may_be_let_go_keeps_no_state_at_its_top_level():
    """Unloaded and loaded again, such a module would lose it (or, held elsewhere, keep two): what must last is the
    app's (app.outputs: the pins a tool drives)."""
    root = _firmware()
    for name in _declarations():
        kept = state_kept(_path(root, name))
        assert kept is None, (name, kept)


def test_the_state_check_finds_a_cache_a_registration_and_a_global():
    from support import remove_tree, tempdir, write

    top = tempdir("state")
    try:
        for planted in ("_cache = {}\n", "_seen = []  # filled later\n", "HOOKS = list()\n", "_buf = bytearray(64)\n",
                        "platform.log_to(print)\n", "def f():\n    global _n\n    _n = 1\n"):
            write(top + "/m.py", '# a module\nfrom mimi.platform import const\n\n_MAX = const(4)\nNAME = "x"\n' + planted)
            assert state_kept(top + "/m.py") is not None, planted
        write(top + "/m.py", '# a module\n_MAX = 4\nWORDS = ("a", "b")\n_TABLE = (\n    b"x"\n)\nschema = {"type": "object"}\n\n\n'
                             'def f(x={}):\n    return x\n')
        assert state_kept(top + "/m.py") is None
    finally:
        remove_tree(top)


def test_one_unloader_in_the_firmware():
    """Only heap.py takes a module out of sys.modules: every other module lets code go by scope."""
    root = _firmware()
    import os

    folders = [root + "/mimi"]
    while folders:
        folder = folders.pop()
        for name in os.listdir(folder):
            path = folder + "/" + name
            if os.stat(path)[0] & 0x4000:
                folders.append(path)
            elif name.endswith(".py") and path != root + "/mimi/heap.py":
                with open(path) as f:
                    for number, line in enumerate(f):
                        for word in ("sys.modules.pop", "del sys.modules", "delattr("):
                            assert word not in line, (path, number + 1, line)
                        at = line.find("sys.modules[")
                        assert at < 0 or "] =" not in line[at:], (path, number + 1, line)  # read, never written
