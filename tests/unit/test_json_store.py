# The stores kept as JSON on flash (cron.json, watchers.json, mcp.json) read one way (storage/json_store.py): a file
# that cannot be read is kept aside as <name>.bad, named on the console, and the store's next save never writes over
# what the owner may still want from it.
import json

from support import read, remove_tree, tempdir, write

from mimi import platform
from mimi.storage import files

NOW = 1_800_000_000


class _Cron:
    name, field = "cron.json", "jobs"

    def load(self, root):
        from mimi.cron.store import Store

        return Store(root)

    def add(self, store, n):
        store.add("at", 0, NOW + 60, "water the plants {}".format(n), "cli", "console", NOW)

    def entries(self, store):
        return store.jobs


class _Watchers:
    name, field = "watchers.json", "watchers"

    def load(self, root):
        from mimi.watch.store import Store

        return Store(root)

    def add(self, store, n):
        store.add("g{}".format(n), "temperature", 60, "tell me below 5 C", "cli", "console", "owner")

    def entries(self, store):
        return store.watchers


class _Servers:
    name, field = "mcp.json", "servers"

    def load(self, root):
        from mimi.mcp.store import Store

        return Store(root)

    def add(self, store, n):
        store.add("s{}".format(n), "http://192.168.1.{}:8000/mcp".format(n))

    def entries(self, store):
        return store.servers


STORES = (_Cron(), _Watchers(), _Servers())
BROKEN = ('{"jobs": [{"id": 1, "kind": "at", "mess',  # a write cut short by a power loss, as an older firmware left it
          "[1, 2, 3]", '{"other": []}', '{"jobs": 3, "watchers": 3, "servers": 3}')


def _told(lines, name):
    return [line for line in lines if name in line and "unreadable" in line]


def _listening():
    lines = []
    platform.log_to(lines.append)
    return lines


def test_a_broken_store_is_kept_aside_named_on_the_console_and_never_written_over():
    for kind in STORES:
        for broken in BROKEN:
            root, lines = tempdir("store"), _listening()
            try:
                write(root + "/" + kind.name, broken)
                store = kind.load(root)
                assert kind.entries(store) == [], (kind.name, broken)
                told = _told(lines, kind.name)
                assert len(told) == 1 and kind.name + ".bad" in told[0] and "no " + kind.field in told[0], lines
                kind.add(store, 1)  # the store's next save
                assert read(root + "/" + kind.name + ".bad") == broken, kind.name  # the owner's bytes, whole
                assert len(json.loads(read(root + "/" + kind.name))[kind.field]) == 1
                assert len(kind.entries(kind.load(root))) == 1 and len(_told(lines, kind.name)) == 1
            finally:
                platform.log_to(print)
                remove_tree(root)


def test_a_readable_store_is_left_alone_and_a_second_broken_file_replaces_the_first_one_kept():
    for kind in STORES:
        root, lines = tempdir("store2"), _listening()
        try:
            kind.add(kind.load(root), 1)
            assert len(kind.entries(kind.load(root))) == 1
            assert not files.exists(root + "/" + kind.name + ".bad") and not _told(lines, kind.name)
            for broken in ("{first", "{second"):
                write(root + "/" + kind.name, broken)
                kind.load(root)
            assert read(root + "/" + kind.name + ".bad") == "{second", kind.name
            assert len(_told(lines, kind.name)) == 2
        finally:
            platform.log_to(print)
            remove_tree(root)
