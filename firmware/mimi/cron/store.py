# Cron jobs kept in <data>/cron.json: add, remove, and which jobs are due, with no burst after downtime.
import json

from mimi.platform import const
from mimi.storage import files, json_store
from mimi.cron import FILE_MAX, FILE_NAME  # the boot part (cron/__init__.py) reads it too

JOBS_MAX = const(16)
EVERY_MIN_S = const(60)  # shortest repeat: each run costs an LLM call
_EVERY_MAX_S = const(366 * 86400)
MESSAGE_MAX = const(1000)  # characters of a job's message for the agent
KINDS = ("every", "at")
_FIELDS = ("id", "kind", "seconds", "next", "message", "channel", "chat_id")


class CronError(ValueError):
    """A job that cannot be added or found; the text is meant for the user (or the model)."""


def _valid_job(job):
    if not isinstance(job, dict):
        return False
    for field in _FIELDS:
        if field not in job:
            return False
    return (job["kind"] in KINDS and isinstance(job["id"], int) and isinstance(job["next"], int)
            and isinstance(job["message"], str) and isinstance(job["seconds"], int))


def describe(job):
    """One line for a person: '3  every 3600 s  next 2025-...  -> telegram:42  Drink water'."""
    from mimi import platform

    when = "every {} s".format(job["seconds"]) if job["kind"] == "every" else "once"
    return "{}  {}  next {}  -> {}:{}{}  {}".format(
        job["id"], when, platform.utc_stamp(job["next"]), job["channel"], job["chat_id"],
        "  as " + job["role"] if job.get("role") else "", job["message"])


class Store:
    """The job list in memory, written atomically on every change."""

    def __init__(self, data_root):
        self.path = files.join(data_root, FILE_NAME)
        self.jobs = []
        self.next_id = 1
        self.load()

    def load(self):
        """Read cron.json; a missing file is no jobs, a broken one is named on the console and kept aside."""
        self.jobs, self.next_id = [], 1
        data = json_store.read(self.path, FILE_MAX, "jobs")
        if data is None:
            return
        jobs = [job for job in data["jobs"] if _valid_job(job)][:JOBS_MAX]
        given = data.get("next_id")
        self.next_id = given if isinstance(given, int) and given > 0 else 1
        for job in jobs:
            self.next_id = max(self.next_id, job["id"] + 1)
        self.jobs = jobs

    def save(self):
        data = {"next_id": self.next_id, "jobs": self.jobs}
        files.write_atomic(self.path, json.dumps(data))

    def add(self, kind, seconds, when, message, channel, chat_id, now, role=None):
        """Add and save a job; kind "every" repeats each `seconds`, "at" runs once at unix time `when`.
        `role` is the role of whoever asked for it: the job's turns act with it (none: the target chat's)."""
        if kind not in KINDS:
            raise CronError("schedule must be 'every' or 'at'")
        if len(self.jobs) >= JOBS_MAX:
            raise CronError("there are already {} jobs, the most allowed; remove one first".format(JOBS_MAX))
        message = (message or "").strip()
        if not message:
            raise CronError("the job needs a message for the agent")
        if len(message) > MESSAGE_MAX:
            raise CronError("the message is longer than {} characters".format(MESSAGE_MAX))
        if kind == "every":
            if not EVERY_MIN_S <= seconds <= _EVERY_MAX_S:
                raise CronError("'every' needs seconds from {} to {}".format(EVERY_MIN_S, _EVERY_MAX_S))
            first = now + seconds
        else:
            if when <= now:
                raise CronError("that time ({}) has already passed; it is now {} (unix {})".format(
                    when, _stamp(now), now))
            seconds, first = 0, when
        job = {"id": self.next_id, "kind": kind, "seconds": seconds, "next": first,
               "message": message, "channel": channel, "chat_id": str(chat_id)}
        if role:
            job["role"] = role
        self.jobs.append(job)
        self.next_id += 1
        try:
            self.save()
        except OSError:
            self.jobs.pop()
            raise
        return job

    def remove(self, job_id):
        """Remove and save; the removed job, or CronError when there is no such job."""
        for i, job in enumerate(self.jobs):
            if job["id"] == job_id:
                del self.jobs[i]
                self.save()
                return job
        raise CronError("no cron job with id {}".format(job_id))

    def next_due(self):
        """The earliest `next` time of any job, or None when there are none."""
        times = [job["next"] for job in self.jobs]
        return min(times) if times else None

    def take_due(self, now):
        """The jobs due at `now`, in time order; one-shots are removed, repeats move on.

        A repeat that missed several runs (the device was off) runs once and then keeps its
        rhythm from now: no burst of catch-up runs. Saved before returning, so a crash right
        after never runs a one-shot twice.
        """
        due = [job for job in self.jobs if job["next"] <= now]
        if not due:
            return []
        due.sort(key=lambda job: (job["next"], job["id"]))
        for job in due:
            if job["kind"] == "at":
                self.jobs.remove(job)
            else:
                following = job["next"] + job["seconds"]
                job["next"] = following if following > now else now + job["seconds"]
        self.save()
        return due


def _stamp(unix):
    from mimi import platform

    return platform.utc_stamp(unix)
