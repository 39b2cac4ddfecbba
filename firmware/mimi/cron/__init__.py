# cron layer: jobs the agent scheduled, kept on flash and run through the inbound queue.
# The service (store + timer task, cron/service.py) is made only when cron.json holds jobs at boot or at its
# first use (a job added or listed), so a board without jobs spends no heap on it (the heap diet).
import asyncio
import json

from mimi.platform import const
from mimi.storage import files

FILE_NAME = "cron.json"  # in the data folder (cron/store.py)
_READ_MAX = const(32 * 1024 + 1)  # store.FILE_MAX + 1: a bigger file is the store's to report
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\ncron_list\tcron_list\t0\t0\tlist the scheduled jobs\tapp.cron.cmd_list"
    "\ncron_remove\tcron_remove <id>\t1\t1\tdelete a scheduled job\tapp.cron.cmd_remove"
    "\n"
)


def setup(app):
    """The cron console commands (their code imported at the first one typed); the service (app.cron) now
    only when cron.json holds jobs or cannot be read (the store reports that at boot, as before). Later,
    App.__getattr__ makes it at the first use of app.cron (the cron tools, these commands)."""
    app.console.commands.add_lines(_COMMANDS)  # app.cron: made at the first one typed, if not yet (App.__getattr__)
    if has_jobs(files.join(app.flash.root, FILE_NAME)):
        scheduler(app)


def has_jobs(path):
    """False only when the file is missing or its job list is empty."""
    text = files.read_text(path, _READ_MAX)
    if text is None:
        return False
    try:
        return bool(json.loads(text)["jobs"])
    except Exception:  # unreadable: the store says so when it loads it
        return True


def scheduler(app):
    """Make app.cron (once): started at once when the network services already run, else with them."""
    from mimi.cron.service import Cron

    app.cron = cron = Cron(app)
    if getattr(app, "services_started", False):
        for started in app.health.startable([cron]):  # safe mode: not at all, as at boot
            app.tasks.append(asyncio.create_task(started.run()))
    return cron

