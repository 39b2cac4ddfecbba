# Watchers: LLM-judged monitors of a pin, the chip's temperature, a tool's result or a JSON field on the web.
# The service (store, limits, timer task: watch/service.py) is made only once watchers.json exists or a
# watcher is added, so a board without watchers spends no heap on it (BENCHMARKS.md, the heap diet). This
# boot part owns the file's name; it never imports the service, which App makes (parts.py).
from mimi.storage import files

# This boot part itself is let go once the boot has added its lines (mimi/heap.py): its lines stay in flash.
LET_GO = ".:boot"
FILE_NAME = "watchers.json"  # in the data folder (watch/store.py)


def setup(app):
    """The watcher console commands (their code, watch/commands.py, imported at the first one typed); the
    service (app.part("watchers")) now only when watchers.json exists (a saved watcher, or a broken file that the
    store reports and keeps aside, as before): it, else None. After the system channel."""
    app.registry.add_commands("mimi.watch.commands")
    if files.exists(files.join(app.flash.root, FILE_NAME)):
        return app.part("watchers")  # made and started with the other services
    return None

