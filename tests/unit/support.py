# Helpers shared by the unit tests; they run unchanged under pytest (CPython) and mp_run.py (MicroPython).
import os
import sys

import asyncio

_counter = [0]


def run(coro):
    """Run a coroutine to completion on a fresh event loop."""
    return asyncio.run(coro)


def _rmtree(path):
    try:
        names = os.listdir(path)
    except OSError:
        os.remove(path)
        return
    for name in names:
        _rmtree(path + "/" + name)
    os.rmdir(path)


def tempdir(tag="t"):
    """A new empty folder under $TMPDIR (or /tmp), unique per call."""
    base = os.getenv("TMPDIR") or "/tmp"
    _counter[0] += 1
    rnd = "".join("{:02x}".format(b) for b in os.urandom(4))
    path = "{}/mimi-{}-{}-{}".format(base, tag, rnd, _counter[0])
    os.mkdir(path)
    return path


def remove_tree(path):
    _rmtree(path)


def raises(exc_type, fn, *args, **kwargs):
    """Call fn and return the exception it raised; fail when it raises nothing or something else."""
    try:
        fn(*args, **kwargs)
    except exc_type as exc:
        return exc
    raise AssertionError("{} did not raise {}".format(fn, exc_type.__name__))


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)


class NotImported:
    """`with NotImported("mimi.safety.confirm"):` the named modules are not imported, as on a device that
    has not needed them since boot (gone from sys.modules and from their package); put back afterwards."""

    def __init__(self, *names):
        self.names = names
        self.saved = []

    def __enter__(self):
        for name in self.names:
            package, _, attr = name.rpartition(".")
            parent = sys.modules.get(package)  # a package let go after boot (heap.forget) holds nothing
            self.saved.append((name, sys.modules.pop(name, None), getattr(parent, attr, None)))
            if parent is not None and hasattr(parent, attr):
                delattr(parent, attr)
        return self

    def __exit__(self, *exc_info):
        for name, module, attribute in self.saved:
            package, _, attr = name.rpartition(".")
            sys.modules.pop(name, None)
            if module is not None:
                sys.modules[name] = module
            parent = sys.modules.get(package)  # a package let go meanwhile (heap.forget) has no attribute
            if parent is not None and attribute is not None:
                setattr(parent, attr, attribute)
            elif parent is not None and hasattr(parent, attr):
                delattr(parent, attr)
        return False


def imported(name):
    return name in sys.modules
