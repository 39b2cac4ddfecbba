# The cron service: wakes every few seconds, and puts each due job's turn on the inbound queue.
import asyncio

from mimi import platform
from mimi.channels.system import check_target, system_message
from mimi.cron.store import CronError, Store, describe
from mimi.health import memory_errors
from mimi.platform import const

CHECK_S = const(5)  # longest sleep between two looks at the job list
_IN_FLIGHT_MAX_S = const(600)  # a repeat whose last turn is still unanswered after this runs again
CLOCK_SET_AFTER = 1704067200  # 2024-01-01: an earlier clock was never set, so no job may run
_NETWORK_WAIT_S = const(5)


def clock_is_set(now):
    return now >= CLOCK_SET_AFTER


class Cron:
    """Job store + timer task, and what the cron console commands run. Tools reach it with app.part("cron"), made at
    its first read (parts.py) and started by App.start_late."""

    def __init__(self, app):
        self.app = app
        self.store = Store(app.flash.root)
        self.fired = 0
        self._in_flight = {}  # job id -> ticks_ms when its turn was queued
        self._wake = asyncio.Event()

    # -- what the tools call --
    def add(self, kind, seconds, when, message, target, now=None, role=None):
        """Schedule a job answering in target=(channel, chat_id), acting with `role`; returns the job dict."""
        now = platform.unix_time() if now is None else now
        if not clock_is_set(now):
            raise CronError("the device clock is not set yet, so nothing can be scheduled")
        channel, chat_id = check_target(target[0], target[1])
        job = self.store.add(kind, seconds, when, message, channel, chat_id, now, role)
        self._wake.set()
        return job

    def remove(self, job_id):
        return self.store.remove(job_id)

    def jobs(self):
        return list(self.store.jobs)

    # -- the timer --
    async def run(self):
        while True:
            await self._nap()
            if not self.app.wifi.is_up():
                continue
            try:
                await self.check(platform.unix_time())
            except MemoryError as exc:
                memory_errors.short("cron", exc)
            except Exception as exc:  # a bad job or a full flash must not stop the timer
                platform.log("cron: check failed: {}".format(exc))
                platform.print_exception(exc)

    async def _nap(self):
        seconds = CHECK_S
        due = self.store.next_due()
        if due is not None:
            seconds = min(CHECK_S, max(due - platform.unix_time(), 1))
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def check(self, now):
        """Queue a turn for every job due at `now` (waiting while the queue is full); returns how many."""
        if not clock_is_set(now):
            return 0
        queued = 0
        for job in self.store.take_due(now):
            if self._still_running(job["id"]):
                platform.log("cron: job {} skipped: its previous run is still being answered".format(job["id"]))
                continue
            try:
                target = check_target(job["channel"], job["chat_id"])
            except ValueError as exc:
                platform.log("cron: job {} has a bad target: {}".format(job["id"], exc))
                continue
            await self.app.bus.inbound.put(self._turn(job, target))
            self.fired += 1
            queued += 1
        return queued

    def _still_running(self, job_id):
        started = self._in_flight.get(job_id)
        if started is None:
            return False
        if platform.ticks_diff(platform.ticks_ms(), started) > _IN_FLIGHT_MAX_S * 1000:
            del self._in_flight[job_id]
            return False
        return True

    def _turn(self, job, target):
        job_id = job["id"]
        self._in_flight[job_id] = platform.ticks_ms()

        def on_reply(text, kind):
            self._in_flight.pop(job_id, None)

        schedule = "every {} s".format(job["seconds"]) if job["kind"] == "every" else "one-shot"
        content = "[cron job {}, {}, set earlier; your answer is sent to {} chat {}]\n{}".format(
            job_id, schedule, target[0], target[1], job["message"])
        # The turn belongs to the target chat's conversation, so a reminder is part of it.
        meta = {"source": "cron", "job": job_id, "session": target, "on_reply": on_reply}
        if job.get("role"):  # the job acts with its creator's role, not the trust of the chat it answers in
            meta["role"] = job["role"]
        return system_message(target, content, meta)

    # -- console --
    async def cmd_list(self):
        jobs = self.jobs()
        if not jobs:
            platform.log("no cron jobs (the agent adds them with the cron_add tool)")
        for job in jobs:
            platform.log("  " + describe(job))
        if not clock_is_set(platform.unix_time()):
            platform.log("note: the clock is not set, so no job runs yet")

    async def cmd_remove(self, job_id):
        if not job_id.isdigit():
            platform.log("error: a job id is a number; see cron_list")
            return
        try:
            job = self.remove(int(job_id))
        except CronError as exc:
            platform.log("error: {}".format(exc))
            return
        platform.log("removed cron job {}: {}".format(job["id"], job["message"]))
