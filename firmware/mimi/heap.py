# The heap's policy, with one owner: whether the heap is tight, what is let go and when, and the one unloader.
#
# A package says in one place, its __init__.py's LET_GO, which of its modules may be let go and the scopes that use
# them (SCOPES: a model call, a tool round, a console command, a consolidation, a web view...). Code that uses such
# a module runs inside a scope of that kind (`with heap.scope("call"):`); scopes are counted across every task,
# and when the last open one of a kind closes, each loaded module declared with it, none of whose other scopes is
# open, is let go: always, or only on a tight heap (a board without PSRAM; a board with PSRAM keeps the code for
# speed), and the heap collected at once, so the blocks it held join the free space as one run before a turn's
# allocations fall between them. A module no package declares is never let go, and one another loaded module keeps
# at its top level (`from mimi.net.http import HTTPError`) waits for that one to go. A module that may be let go
# keeps no state of its own (tests/unit/test_heap.py checks): what must outlive it lives in objects the app owns.
# Nothing else in the firmware unloads a module.
import sys

from mimi.platform import const

_TIGHT_BELOW = const(2 * 1024 * 1024)  # a heap under this at boot has no PSRAM behind it
_EARLY_GC_SHARE = const(256)  # a tight heap is collected after every 1/256 of it allocated ...
_EARLY_GC_MIN = const(1024)  # ... and at least every 1 KB

# Each scope kind, and when the modules declared with it are let go: "always" once its last scope closes (code
# run once a boot, or rarely), "tight" only on a tight heap (code a roomy board keeps for the next use). A str: on
# a ROMFS board it stays in flash (docs/architecture.md's table of scopes is held to it).
SCOPES = (
    " boot:always"  # run once a boot: the tools' loading, boot parts, the names interned, the boot's verdict
    " part:always"  # making an optional part (parts.py): a few times a boot at most
    " command:always"  # a console command's code (the console's own)
    " consolidation:always"  # a session's oldest turns summarised: rare
    " view:always"  # a web app view's texts (the Settings view's descriptions)
    " setting:always"  # a setting's value checked as it is set
    " call:tight"  # a model call: the clients' code and the HTTP client
    " tool:tight"  # a tool call: the built-in tools' code and what runs them
    " "
)
_open = {}  # scope kind -> how many of it are open now, every task together
_state = [False]  # the heap at boot is under 2 MB (choose())


class scope:
    """`with heap.scope(kind):` around code that uses modules declared with that kind (awaits inside included):
    they are let go when the last open scope of the kind, in any task, closes."""

    def __init__(self, kind):
        if _when(kind) is None:
            raise ValueError("no scope kind " + kind)
        self.kind = kind

    def __enter__(self):
        _open[self.kind] = _open.get(self.kind, 0) + 1
        return self

    def __exit__(self, *exc):
        left = _open[self.kind] - 1
        if left:
            _open[self.kind] = left
        else:
            del _open[self.kind]
            if _when(self.kind) or tight():
                _let_go(self.kind)
        return False


def _when(kind):
    """True for a kind let go on every board, False for one let go on a tight heap only, None for no kind: read in
    SCOPES in place."""
    at = SCOPES.find(kind)
    while at >= 0:
        end = at + len(kind)
        if SCOPES.startswith(" ", at - 1) and SCOPES.startswith(":", end):
            return SCOPES.startswith("always", end + 1)
        at = SCOPES.find(kind, end)
    return None


def is_open(kind):
    return kind in _open


def tight():
    """True on a heap under 2 MB at boot (no PSRAM: choose(), at the boot's end) or in small-board mode (at once when
    it is switched on): code is let go after use. Before choose() (the boot, a part made alone) the heap counts as
    roomy: nothing is let go that the boot may still want."""
    from mimi import board

    return board.small() or _state[0]


def choose(heap=None):
    """The heap's policy from the board, at the end of the boot: a heap under 2 MB lets code go after use, and is
    collected early, after every 1/256 of it allocated (the boot's own blocks placed first), so a turn's garbage
    goes back before it hems in the blocks that live on. `heap`: a heap's size to judge instead of the board's
    (nothing else changes then). Returns tight()."""
    from mimi import board, platform

    total = board.heap_total() if heap is None else heap
    _state[0] = total is not None and total < _TIGHT_BELOW
    if heap is None and _state[0]:
        platform.collect_every(max(_EARLY_GC_MIN, total // _EARLY_GC_SHARE))
    return tight()


def _let_go(kind):
    """The loaded modules declared with `kind` (each loaded package's LET_GO: "module:scope,scope ...", "." the
    package itself) let go, where none of their other scopes is open and no loaded module that stays keeps them at
    its top level (those wait for their holder): after the last scope of the kind closed. The tables are read in
    place: a scope's end allocates only the names of what may go (this runs after every call on a tight heap,
    and garbage there scatters the blocks that live on)."""
    going = []
    for name in sys.modules:
        table = _globals(sys.modules[name]).get("LET_GO")  # not getattr: a miss would raise, and a raise allocates
        if not isinstance(table, str):
            continue
        at, end = 0, len(table)
        while at < end:
            stop = table.find(" ", at)
            stop = end if stop < 0 else stop
            colon = table.find(":", at, stop)
            if colon > at and _names(table, colon + 1, stop, kind) and not _any_open(table, colon + 1, stop):
                stem = name if colon - at == 1 and table[at] == "." else name + "." + table[at:colon]
                if stem in sys.modules:
                    going.append(stem)
            at = stop + 1
    while going:  # a module kept keeps what it holds in turn
        held = _held(going)
        if not held:
            break
        going = [name for name in going if name not in held]
    for name in going:
        forget(name)
    if going:  # collected now, its blocks one free run before the next allocations fall between them
        from mimi import platform

        platform.collect()


def _names(table, start, stop, kind):
    """True when the comma-separated kinds table[start:stop] name `kind` (found in place, nothing sliced)."""
    at = table.find(kind, start, stop)
    while at >= 0:
        after = at + len(kind)
        if (at == start or table[at - 1] == ",") and (after == stop or table[after] == ","):
            return True
        at = table.find(kind, after, stop)
    return False


def _any_open(table, start, stop):
    for kind in _open:
        if _names(table, start, stop, kind):
            return True
    return False


def forget(name):
    """The one unloader: the module out of sys.modules and its package's attribute, so its heap is freed once
    nothing else holds it and its next import loads it afresh."""
    module = sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    package = sys.modules.get(parent)
    if module is not None and package is not None and getattr(package, child, None) is module:
        try:
            delattr(package, child)
        except (AttributeError, TypeError):  # a package that cannot lose the attribute: only the name goes
            pass


def _held(going):
    """The modules of `going` that a loaded module of the same package (the firmware's own: a laptop's test or
    runner never keeps a board's), not going itself, keeps at its top level: the module, or a class, function,
    closure or instance of it (a package's attribute for its own module aside). Unloading one would leave that
    holder its copy and the next import make a second (twice its heap, and exception classes that no longer
    match). One pass over the loaded modules' names, by the values' types: no attribute asked that a value may
    not have (a miss raises, and every raise allocates)."""
    spaces, classes, held, tops = {}, {}, [], []
    for name in going:
        names = _globals(sys.modules[name])
        spaces[id(names)] = name
        for value in names.values():
            if type(value) is type and _globals(value).get("__module__") == name:
                classes[id(value)] = name  # a class this module made
        top = name[: name.find(".") + 1]
        if top not in tops:
            tops.append(top)  # the firmware's "mimi."; a test's package beside it
    for other_name in sys.modules:
        top = _top_of(other_name, tops)
        if top is None or other_name in going:
            continue
        for value in _globals(sys.modules[other_name]).values():
            kind = type(value)
            if kind is _MODULE:
                found = value.__name__
                if found.startswith(other_name) and found[len(other_name):len(other_name) + 1] == "." \
                        and found.find(".", len(other_name) + 1) < 0:
                    continue  # a package's attribute for its own module
            elif kind is _FUNCTION or kind is _CLOSURE:
                found = spaces.get(id(value.__globals__))
            else:
                found = classes.get(id(value)) or classes.get(id(kind))  # the class, or an instance of it
            if found in going and found not in held and found.startswith(top):
                held.append(found)
    return held


def _globals(thing):
    """A module's (or a class's) own names: its __dict__, or an empty one where it has none."""
    try:
        return thing.__dict__
    except AttributeError:
        return {}


def _top_of(name, tops):
    for top in tops:
        if name.startswith(top):
            return top
    return None


def _enclosing():
    level = 1

    def inner():
        return level

    return inner


_MODULE, _FUNCTION, _CLOSURE = type(sys), type(forget), type(_enclosing())  # the unix port's closure is its own type
del _enclosing
