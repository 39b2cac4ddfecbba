# cron layer: jobs the agent scheduled, kept on flash and run through the inbound queue.
# The service (store + timer task, cron/service.py) is made only when cron.json holds jobs at boot or at its
# first use (a job added or listed), so a board without jobs spends no heap on it (the heap diet). This boot
# part owns the file's name and size; it never imports the service, which App makes (parts.py).
import json

from mimi.platform import const
from mimi.storage import files

# This boot part itself is let go once the boot has added its lines (mimi/heap.py): its lines stay in flash.
LET_GO = ".:boot"
FILE_NAME = "cron.json"  # in the data folder
FILE_MAX = const(32 * 1024)  # a bigger cron.json is not ours: the store refuses to parse it
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = (
    "\ncron_list\tcron_list\t0\t0\tlist the scheduled jobs\tmimi.cron:cmd_list(app)"
    "\ncron_remove\tcron_remove <id>\t1\t1\tdelete a scheduled job\tmimi.cron:cmd_remove(app)"
    "\n"
)


def setup(app):
    """The cron console commands (the service, made at the first one typed); the service now only when cron.json
    holds jobs or cannot be read (the store reports that at boot, as before): it, else None."""
    app.console.commands.add_lines(_COMMANDS)
    if has_jobs(files.join(app.flash.root, FILE_NAME)):
        return app.part("cron")  # made and started with the other services
    return None


async def cmd_list(app):
    await app.part("cron").cmd_list()


async def cmd_remove(app, job_id):
    await app.part("cron").cmd_remove(job_id)


def has_jobs(path):
    """False only when the file is missing or its job list is empty."""
    text = files.read_text(path, FILE_MAX + 1)  # a bigger file is the store's to report
    if text is None:
        return False
    try:
        return bool(json.loads(text)["jobs"])
    except Exception:  # unreadable: the store says so when it loads it
        return True
