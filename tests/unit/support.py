# Helpers shared by the unit tests; they run unchanged under pytest (CPython) and mp_run.py (MicroPython).
import os

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
