# Small-board mode's boot interns every firmware module's names (board_names.py): each module not loaded yet is
# imported once and let go, so sys.modules and the packages are as before, and a later import makes it anew.
import os
import sys

import mimi.storage
from mimi import board_names, platform


def test_every_module_is_imported_once_and_let_go():
    lazy = "mimi.storage.history_pieces"  # loaded by a turn, not by the imports above
    sys.modules.pop(lazy, None)
    if hasattr(mimi.storage, "history_pieces"):
        delattr(mimi.storage, "history_pieces")
    before = sorted(sys.modules)
    done = board_names.intern_all("mimi.storage", sources=True)  # one package: the unit heap compiles sources
    if sys.implementation.name != "micropython":
        assert done is None  # CPython has no qstr pools: nothing to do
        return
    folder = mimi.storage.__file__.replace("\\", "/").rsplit("/", 1)[0]
    waiting = [n for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py"
               and "mimi.storage." + n[:-3] not in before]
    assert len(waiting) >= 5 and done == len(waiting)  # every module of the package not loaded yet, each once
    assert sorted(sys.modules) == before and not hasattr(mimi.storage, "history_pieces")
    from mimi.storage.history_pieces import HistoryPieces  # made anew, and whole

    assert HistoryPieces.is_json is True


def test_sources_are_not_interned_unless_asked():
    before = sorted(sys.modules)
    assert board_names.intern_all("mimi.storage") is None  # the unit tests run the sources: nothing imported
    assert sorted(sys.modules) == before


def test_a_package_without_a_folder_has_nothing_to_intern():
    class Frozen:
        __file__ = ".frozen/mimi/__init__.mpy"  # no folder to list there

    sys.modules["frozen_pkg_for_test"] = Frozen()
    try:
        assert board_names.intern_all("frozen_pkg_for_test") is None
    finally:
        del sys.modules["frozen_pkg_for_test"]


def test_a_block_is_free_only_where_the_heap_holds_one():
    # The names' next pool is one block: a board whose heap has none does not start interning (a try that ran out
    # would fill the last pool, and the next new name anywhere would need that block).
    free, used = platform.heap_info()
    if free is None:  # CPython: no GC heap figures, and no qstr pools to make room for
        assert board_names.intern_all("mimi.storage", sources=True) is None
        return
    before = sorted(sys.modules)
    assert board_names.block_free(free + used + 1) is False  # more than the whole heap
    assert board_names.block_free(2048) is True
    assert sorted(sys.modules) == before
