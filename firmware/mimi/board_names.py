# Small-board mode: the names (qstrs) of every firmware module interned at boot, while the heap is whole.
#
# MicroPython keeps each name a loaded module uses in qstr pools that never shrink. A new pool is twice the size
# of the last and must be one block: the pool after ~1,280 names is 2,560 entries, about 18 KB on the chip and
# 28 KB on the 64-bit unix port. Modules loaded lazily (a console command, MCP, the web chat, an error's text)
# would add that pool hours after boot, on a heap cut into small holes, where no block that size is left: from
# then on every import of a module with a new name fails ("memory allocation failed, allocating 2560 bytes":
# the pool's entries) and no turn is answered until a reset. Importing each module once at boot and letting it
# go makes the pools then; the modules' objects are garbage again, their names stay. Only where the modules run
# in place from a ROMFS image: there an import costs the module's objects and its names' pool entries, not its
# code. From .mpy files each import loads the module's bytecode into the heap too (the boot would need room for
# the largest module's closure beside the pools: a small heap ran out after 15 of 117 modules and the boot
# failed), and a module loaded later needs heap for its code whatever the pools hold: nothing is done there. A
# frozen build keeps its names in flash and has no folder to list: nothing is done either.
import gc
import os
import sys

from mimi import heap
from mimi.platform import log
from mimi.storage.files import is_dir

_COLLECT_EVERY = 8  # modules imported between collections: the heap's peak stays one module's closure
# The pool the firmware's names need beyond the ~1,280 a roomy chat fills: its entries, each a pointer, a 2-byte
# hash and a 1-byte length, in one block (18 KB on the chip, 28 KB on the 64-bit unix port).
_POOL_NAMES = 2560
_POOL_ENTRY = (8 if sys.maxsize > 0x7FFFFFFF else 4) + 3
_ROM = "/rom/"  # where a ROMFS image is mounted (romfs_boot.py)
_FROZEN = (".frozen", "mimi/")  # a frozen module's file name (platform.code_origin)


def _modules(folder, dotted):
    """Every module's dotted name under folder (.mpy or .py files), packages' own modules included."""
    for name in sorted(os.listdir(folder)):
        path = folder + "/" + name
        if is_dir(path):
            yield from _modules(path, dotted + "." + name)
        elif name.endswith(".mpy") or name.endswith(".py"):
            stem = name.rsplit(".", 1)[0]
            if stem != "__init__":
                yield dotted + "." + stem


def intern_all(package="mimi", sources=False):
    """Import every module of the package not loaded yet, then let it go. The number of modules imported, or
    None where there is nothing to do (CPython has no qstrs; a frozen package no folder) or nothing worth it:
    a package whose modules load into the heap, .mpy files or its sources (each import would load or compile
    a module's code), unless `sources` (the unit tests' sources)."""
    if sys.implementation.name != "micropython":
        return None
    path = sys.modules[package].__file__.replace("\\", "/")
    if not path.startswith(_ROM) and not sources:  # not in a ROMFS image, whose bytecode runs from flash
        if path.endswith(".mpy") and not path.startswith(_FROZEN):
            log("board: module names not interned at boot: modules from .mpy files load into the heap whole "
                "(a ROMFS image or a frozen build keeps their code in flash)")
        return None
    root = path.rsplit("/", 1)[0]
    try:
        names = [name for name in _modules(root, package) if name not in sys.modules]
    except OSError:
        return None
    pool = _POOL_NAMES * _POOL_ENTRY
    if not block_free(pool):  # a try that ran out would leave the last pool full: the next new name anywhere
        log("board: module names not interned at boot: no free block of {} KB for their pool: a heap this small "
            "cannot load every feature later".format(pool // 1024))  # would need the block then
        return None
    done = 0
    for name in names:
        if name in sys.modules:  # a module imported meanwhile by one before it, and kept
            continue
        loaded = set(sys.modules)  # looked up for every loaded module after each import: a set, not a list
        try:
            __import__(name)
            done += 1
        except MemoryError:  # no block for the next pool even now: the heap is too small for every feature
            _let_new_go(loaded)
            gc.collect()
            log("board: no memory to intern the names of every module ({} of {} done): a heap this small cannot "
                  "load every feature later".format(done, len(names)))
            return None
        except Exception:  # noqa: BLE001  a module this port cannot load: the names read before it stay
            pass
        _let_new_go(loaded)
        if done % _COLLECT_EVERY == 0:
            gc.collect()
    gc.collect()
    return done


def block_free(size):
    """True when the heap has a free block of `size` bytes now (the chip's split heap grows to find one)."""
    gc.collect()
    try:
        block = bytearray(size)
    except MemoryError:
        return False
    del block
    gc.collect()
    return True


def _let_new_go(loaded):
    for new in [n for n in sys.modules if n not in loaded]:
        heap.forget(new)
