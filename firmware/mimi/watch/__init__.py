# Watchers: LLM-judged monitors of a pin, the chip's temperature, a tool's result or a JSON field on the web.
# The service (store, limits, timer task: watch/service.py) is made only once watchers.json exists or a
# watcher is added, so a board without watchers spends no heap on it (BENCHMARKS.md, the heap diet).
import asyncio

from mimi.storage import files

FILE_NAME = "watchers.json"  # in the data folder (watch/store.py)


def setup(app):
    """The watcher console commands (their code, watch/commands.py, imported at the first one typed); the
    service (app.watchers) now only when watchers.json exists (a saved watcher, or a broken file that the
    store reports and keeps aside, as before); after the system channel."""
    app.watchers = None
    app.registry.add_commands("mimi.watch.commands")
    if files.exists(files.join(app.flash.root, FILE_NAME)):
        watchers(app)
    return app.watchers


def watchers(app):
    """app.watchers, made at its first need (a watcher added, listed, checked); started at once when the
    network services already run (App.services_started), else with them."""
    if app.watchers is None:
        from mimi.watch.service import Watchers

        app.watchers = Watchers(app)
        if getattr(app, "services_started", False):
            for started in app.health.startable([app.watchers]):  # safe mode: not at all, as at boot
                app.tasks.append(asyncio.create_task(started.run()))
    return app.watchers
