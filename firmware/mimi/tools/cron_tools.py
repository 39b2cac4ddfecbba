# cron_add, cron_list, cron_remove: the agent schedules its own future turns (reminders, checks).
from mimi import platform
from mimi.channels.system import TARGET_CHANNELS, check_reachable, encode_target
from mimi.cron.store import CronError, EVERY_MIN_S
from mimi.tools.registry import Tool, ToolError


class _CronTool(Tool):
    def _cron(self):
        cron = self.app.part("cron")  # made at the first need (parts.py)
        if cron is None:
            raise ToolError("cron is not running on this device")
        return cron


def _shown(job):
    from mimi.tools.clock import iso_utc

    shown = {"id": job["id"], "message": job["message"], "next_run_utc": iso_utc(job["next"]),
             "next_run_unix": job["next"], "answer_in": encode_target(job["channel"], job["chat_id"])}
    if job.get("role"):
        shown["acts_as"] = job["role"]
    if job["kind"] == "every":
        shown["every_seconds"] = job["seconds"]
    else:
        shown["once"] = True
    return shown


class CronAdd(_CronTool):
    name = "cron_add"
    tier, acting, level = "operator", True, "autonomous"  # the reply says what was scheduled; cron_list shows it
    wants_turn = True  # the job answers in this chat and acts with this turn's role
    description = (
        "Schedule a future turn for yourself: a reminder or a recurring check. When it is due you "
        "receive `message` as a [cron job] turn and your answer is sent to the chat (by default "
        "this one). schedule 'in' = once after `seconds`; 'at' = once at Unix time `at`; 'every' = "
        "repeat each `seconds` (at least {} s). Write message as an instruction to yourself, e.g. "
        "'Remind the owner to call the dentist'.".format(EVERY_MIN_S)
    )
    schema = {
        "type": "object",
        "properties": {
            "schedule": {"type": "string", "enum": ["in", "at", "every"]},
            "seconds": {"type": "integer", "description": "for 'in' and 'every'"},
            "at": {"type": "integer", "description": "for 'at': Unix time in seconds (UTC)"},
            "message": {"type": "string", "description": "what to do when the job runs"},
            "channel": {"type": "string", "enum": list(TARGET_CHANNELS),
                        "description": "where the answer goes; default: this chat"},
            "chat_id": {"description": "chat in that channel (Telegram: the user id); default: this chat"},
        },
        "required": ["schedule", "message"],
    }

    def run(self, input, turn):
        cron = self._cron()
        schedule = input["schedule"]
        now = platform.unix_time()
        requesting = turn.asker
        target = requesting
        if "channel" in input or "chat_id" in input:
            target = (input.get("channel", requesting[0]), input.get("chat_id", requesting[1]))
        seconds, when = input.get("seconds"), input.get("at")
        if schedule in ("in", "every") and seconds is None:
            raise ToolError("schedule '{}' needs `seconds`".format(schedule))
        if schedule == "at" and when is None:
            raise ToolError("schedule 'at' needs `at` (a Unix time)")
        if schedule == "in":
            schedule, when = "at", now + seconds
        # The job's turns act with the asker's role: an operator's job answering in the console is no owner.
        try:
            target = check_reachable(self.app, target, requesting)
            job = cron.add(schedule, seconds or 0, when or 0, input["message"], target, now, turn.role)
        except ValueError as exc:  # CronError included
            raise ToolError(str(exc))
        return _shown(job)


class CronList(_CronTool):
    name = "cron_list"
    description = "List your scheduled cron jobs: id, schedule, next run (UTC) and where each answers."
    schema = {"type": "object", "properties": {}, "required": []}
    tier, acting, level = "observer", False, "autonomous"

    def run(self, input):
        jobs = [_shown(job) for job in self._cron().jobs()]
        return {"jobs": jobs, "now_unix": platform.unix_time()} if jobs else "no cron jobs"


class CronRemove(_CronTool):
    name = "cron_remove"
    description = "Delete a scheduled cron job by its id (see cron_list)."
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer", "description": "the job id from cron_list"}},
        "required": ["id"],
    }
    tier, acting, level = "operator", True, "autonomous"

    def run(self, input):
        try:
            job = self._cron().remove(input["id"])
        except CronError as exc:
            raise ToolError(str(exc))
        return "removed cron job {}: {}".format(job["id"], job["message"])


TOOLS = (CronAdd, CronList, CronRemove)
