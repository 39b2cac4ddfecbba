# Cron: the job store on flash, the timer's check, the system channel, and the cron/send_message tools.
import json

from stub_app import stub_app
from support import raises, read, remove_tree, run, tempdir, write

from mimi import cron, platform
from mimi.channels.system import (
    check_reachable, decode_target, encode_target, is_heartbeat_ok, requesting_chat,
    system_message)
from mimi.cron.service import CLOCK_SET_AFTER, Cron
from mimi.cron.store import EVERY_MIN_S, JOBS_MAX, CronError, Store
from mimi.tools import cron_tools, registry, send_message, turn

NOW = 1760000000  # 2025-10-09


def _app():
    app = stub_app("cron")
    cron.setup(app)  # the console commands, as at boot (no cron.json: no service yet)
    app.cron = Cron(app)
    return app


def _inbound(app):
    items = []
    while not app.bus.inbound.empty():
        items.append(app.bus.inbound.get_nowait())
    return items


# -- the store --

def test_jobs_survive_a_reboot_and_ids_are_not_reused():
    root = tempdir("cron")
    try:
        store = Store(root)
        every = store.add("every", 3600, 0, "Remind the owner to drink water", "telegram", "42", NOW)
        once = store.add("at", 0, NOW + 600, "Say good night", "cli", "console", NOW)
        assert (every["id"], once["id"]) == (1, 2)
        assert every["next"] == NOW + 3600 and once["next"] == NOW + 600
        store.remove(1)
        again = Store(root)  # a reboot: everything comes back from cron.json
        assert [(j["id"], j["kind"], j["message"], j["channel"], j["chat_id"]) for j in again.jobs] == [
            (2, "at", "Say good night", "cli", "console")]
        assert again.add("every", 60, 0, "tick", "cli", "console", NOW)["id"] == 3
        assert json.loads(read(root + "/cron.json"))["next_id"] == 4
    finally:
        remove_tree(root)


def test_at_most_16_jobs():
    root = tempdir("cron")
    try:
        store = Store(root)
        for i in range(JOBS_MAX):
            store.add("at", 0, NOW + 100 + i, "job {}".format(i), "cli", "console", NOW)
        exc = raises(CronError, store.add, "at", 0, NOW + 999, "one more", "cli", "console", NOW)
        assert "16" in str(exc) and "remove one" in str(exc)
        assert len(Store(root).jobs) == JOBS_MAX
    finally:
        remove_tree(root)


def test_bad_jobs_are_refused_with_a_reason():
    root = tempdir("cron")
    try:
        store = Store(root)
        short = EVERY_MIN_S - 1
        assert "seconds" in str(raises(CronError, store.add, "every", short, 0, "x", "cli", "c", NOW))
        assert "passed" in str(raises(CronError, store.add, "at", 0, NOW, "x", "cli", "c", NOW))
        assert "message" in str(raises(CronError, store.add, "at", 0, NOW + 5, "  ", "cli", "c", NOW))
        assert "longer" in str(raises(CronError, store.add, "at", 0, NOW + 5, "x" * 1001, "cli", "c", NOW))
        assert "no cron job with id 7" == str(raises(CronError, store.remove, 7))
        assert store.jobs == []
    finally:
        remove_tree(root)


def test_a_missed_one_shot_runs_once_after_boot():
    root = tempdir("cron")
    try:
        Store(root).add("at", 0, NOW + 60, "Take the cake out", "cli", "console", NOW)
        store = Store(root)  # booted an hour later
        assert store.take_due(NOW + 59) == []
        due = store.take_due(NOW + 3600)
        assert [job["message"] for job in due] == ["Take the cake out"]
        assert store.take_due(NOW + 3601) == []
        assert Store(root).jobs == []  # gone from the flash too: a second boot does not run it again
    finally:
        remove_tree(root)


def test_a_repeat_keeps_its_rhythm_and_never_bursts_after_downtime():
    root = tempdir("cron")
    try:
        store = Store(root)
        store.add("every", 60, 0, "check the plants", "cli", "console", NOW)
        assert store.take_due(NOW + 59) == []
        assert len(store.take_due(NOW + 62)) == 1  # a little late...
        assert store.jobs[0]["next"] == NOW + 120  # ...but the next run stays on the minute
        # Off for ten minutes: one run on boot, not ten, then every 60 s from now.
        rebooted = Store(root)
        assert len(rebooted.take_due(NOW + 720)) == 1
        assert rebooted.take_due(NOW + 720) == []
        assert rebooted.jobs[0]["next"] == NOW + 780
        assert Store(root).jobs[0]["next"] == NOW + 780
    finally:
        remove_tree(root)


def test_an_unreadable_cron_file_means_no_jobs_not_a_crash():
    root = tempdir("cron")
    try:
        write(root + "/cron.json", "{not json")
        store = Store(root)
        assert store.jobs == []
        store.add("at", 0, NOW + 5, "x", "cli", "console", NOW)  # and it can be used again
        assert len(Store(root).jobs) == 1
        assert read(root + "/cron.json.bad") == "{not json"  # the broken file kept aside, not written over
        write(root + "/cron.json", json.dumps({"next_id": 3, "jobs": [{"id": 1}, "junk"]}))
        assert Store(root).jobs == [] and Store(root).next_id == 3
    finally:
        remove_tree(root)


# -- the service --

def test_a_due_job_becomes_a_system_turn_for_its_chat():
    app = _app()
    try:
        job = app.cron.add("every", 3600, 0, "Remind the owner to stretch", ("telegram", "42"), NOW)
        assert run(app.cron.check(NOW + 3599)) == 0
        assert run(app.cron.check(NOW + 3600)) == 1
        (turn,) = _inbound(app)
        assert turn.channel == "system" and turn.chat_id == "telegram:42"
        assert "Remind the owner to stretch" in turn.content
        assert "cron job {}".format(job["id"]) in turn.content
        assert turn.meta["session"] == ("telegram", "42") and turn.meta["source"] == "cron"
        # While that turn is unanswered, the next run is skipped rather than piled up.
        assert run(app.cron.check(NOW + 7200)) == 0
        turn.meta["on_reply"]("Time to stretch!", "reply")
        assert run(app.cron.check(NOW + 10800)) == 1
    finally:
        remove_tree(app.top)


def test_nothing_runs_or_is_added_while_the_clock_is_unset():
    app = _app()
    try:
        assert "clock" in str(raises(CronError, app.cron.add, "at", 0, 500, "x", ("cli", "console"), 100))
        app.cron.add("at", 0, NOW + 5, "x", ("cli", "console"), NOW)
        assert run(app.cron.check(CLOCK_SET_AFTER - 1)) == 0
        assert len(app.cron.jobs()) == 1
    finally:
        remove_tree(app.top)


def test_console_cron_remove_deletes_from_flash():
    app = _app()
    try:
        app.cron.add("at", 0, NOW + 5, "x", ("cli", "console"), NOW)
        handler = app.console.commands.entry("cron_remove")[0]
        run(handler("1"))
        assert Store(app.flash.root).jobs == []
        run(handler("abc"))  # not a number: a message, no exception
        run(app.console.commands.entry("cron_list")[0]())
    finally:
        remove_tree(app.top)


def test_the_service_is_made_at_boot_only_when_jobs_are_saved():
    app = stub_app("cron-boot", parts=True)  # app.cron made at its first read, as on the device
    try:
        path = app.flash.root + "/cron.json"
        assert cron.setup(app) is None and app.services == []  # no cron.json: made at the first use
        write(path, json.dumps({"next_id": 4, "jobs": []}))
        assert not cron.has_jobs(path)
        write(path, "{not json")
        assert cron.has_jobs(path)  # the store reports a broken file when it loads it
        Store(app.flash.root).add("at", 0, NOW + 60, "Take the cake out", "cli", "console", NOW)
        cron.setup(app)
        assert app.services == [app.cron] and len(app.cron.jobs()) == 1  # started with the other services
    finally:
        remove_tree(app.top)


# -- the system channel --

def test_targets_are_encoded_in_the_chat_id_and_checked():
    assert encode_target("telegram", 42) == "telegram:42"
    assert decode_target("telegram:-100123") == ("telegram", "-100123")
    assert decode_target("websocket:ws_1") == ("websocket", "ws_1")
    for bad in ("telegram", "system:x", "telegram:abc", "cli:", "mail:x"):
        raises(ValueError, decode_target, bad)
    assert requesting_chat("telegram", "42") == ("telegram", "42")
    assert requesting_chat("system", "websocket:ws_2") == ("websocket", "ws_2")
    assert requesting_chat(None, "") == ("cli", "console")


def test_replies_reach_the_target_chat_and_heartbeat_ok_reaches_no_one():
    app = _app()
    try:
        outcomes = []
        turn = system_message(("telegram", "42"), "check", {"source": "cron",
                                                           "on_reply": lambda t, k: outcomes.append(k)})
        reply = {"kind": "reply", "streamed": False, "request": turn.meta}
        from mimi.bus.message import Message

        run(app.system.send(Message("system", turn.chat_id, "Stretch now!", reply)))
        (sent,) = app.channels["telegram"].sent
        assert (sent.channel, sent.chat_id, sent.content) == ("telegram", "42", "Stretch now!")
        for quiet in ("HEARTBEAT_OK", "  HEARTBEAT_OK.\n", "**HEARTBEAT_OK**"):
            run(app.system.send(Message("system", turn.chat_id, quiet, reply)))
        assert len(app.channels["telegram"].sent) == 1 and app.system.silenced == 3
        assert outcomes == ["reply"] * 4
        assert not is_heartbeat_ok("HEARTBEAT_OK, but water the plants")
        # Errors reach the chat unless the turn asked for quiet errors (the heartbeat does).
        error = {"kind": "error", "streamed": False, "request": dict(turn.meta, quiet_errors=True)}
        run(app.system.send(Message("system", turn.chat_id, "API down", error)))
        assert len(app.channels["telegram"].sent) == 1
    finally:
        remove_tree(app.top)


# -- the tools --

def test_cron_add_defaults_to_the_requesting_chat():
    app = _app()
    try:
        add = cron_tools.CronAdd(app)
        shown = add.run({"schedule": "every", "seconds": 3600, "message": "Water"},
                        turn.of(app.config, "telegram", "42", {}))
        assert shown["answer_in"] == "telegram:42" and shown["every_seconds"] == 3600
        assert shown["next_run_unix"] - platform.unix_time() in (3599, 3600)
        # A cron turn that schedules another job answers in the same real chat, not in "system".
        shown = add.run({"schedule": "in", "seconds": 90, "message": "Again"},
                        turn.of(app.config, "system", "telegram:42"))
        assert shown["answer_in"] == "telegram:42" and shown["once"]
        listed = cron_tools.CronList(app).run({})
        assert [job["id"] for job in listed["jobs"]] == [1, 2]
        assert "removed cron job 1" in cron_tools.CronRemove(app).run({"id": 1})
        assert [job["id"] for job in Store(app.flash.root).jobs] == [2]
        assert "no cron job" in str(raises(registry.ToolError, cron_tools.CronRemove(app).run, {"id": 1}))
    finally:
        remove_tree(app.top)


def test_a_job_acts_with_the_role_of_whoever_asked_for_it():
    app = _app()
    try:
        app.config.set("tg_config", "allowlist", "7")
        operator = turn.of(app.config, "telegram", "7", {"user_id": 7, "role": "operator"})
        shown = cron_tools.CronAdd(app).run({"schedule": "every", "seconds": 3600, "message": "Tidy up",
                                             "channel": "cli", "chat_id": "console"}, operator)
        assert shown["answer_in"] == "cli:console" and shown["acts_as"] == "operator"
        app.cron.store.jobs.append({"id": 9, "kind": "every", "seconds": 3600, "next": NOW + 3600,
                                    "message": "Old job", "channel": "cli", "chat_id": "console"})
        app.cron.store.save()
        reloaded = Store(app.flash.root).jobs
        assert reloaded[0]["role"] == "operator" and "role" not in reloaded[1]  # older jobs still load
        app.cron.store.jobs[0]["next"] = NOW + 3600
        assert run(app.cron.check(NOW + 3600)) == 2
        turns = {turn.meta["job"]: turn for turn in _inbound(app)}
        assert turn.of(app.config, "system", turns[1].chat_id,
                       turns[1].meta).role == "operator"  # not the console's owner
        assert turn.of(app.config, "system", turns[9].chat_id,
                       turns[9].meta).role == "owner"  # no role stored: the chat's trust
    finally:
        remove_tree(app.top)


def test_tools_never_write_to_strangers_on_telegram():
    app = _app()
    try:
        console = turn.of(app.config, "cli", "console")
        stranger = {"schedule": "in", "seconds": 60, "message": "x", "channel": "telegram", "chat_id": "7"}
        error = raises(registry.ToolError, cron_tools.CronAdd(app).run, stranger, console)
        assert "allowlist" in str(error)
        app.config.set("tg_config", "allowlist", "7")
        assert check_reachable(app, ("telegram", 7), ("cli", "console")) == ("telegram", "7")
        assert "needs `seconds`" in str(raises(registry.ToolError, cron_tools.CronAdd(app).run,
                                               {"schedule": "every", "message": "x"}, console))
    finally:
        remove_tree(app.top)


def test_send_message_puts_a_reply_on_the_outbound_queue():
    app = _app()
    try:
        tool, console = send_message.SendMessage(app), turn.console()
        result = run(tool.run({"channel": "cli", "chat_id": "console", "text": "Hello there"}, console))
        assert "sent" in result
        message = app.bus.outbound.get_nowait()
        assert (message.channel, message.chat_id, message.content) == ("cli", "console", "Hello there")
        assert message.meta["kind"] == "reply"
        # Telegram needs a bot token and an allowlisted user.
        app.config.set("tg_config", "allowlist", "42")
        to_owner = {"channel": "telegram", "chat_id": 42, "text": "x"}
        error = raises(registry.ToolError, run, tool.run(to_owner, console))
        assert "bot token" in str(error)
        assert "empty" in str(raises(registry.ToolError, run,
                                     tool.run({"channel": "cli", "chat_id": "console", "text": " "}, console)))
        assert app.bus.outbound.empty()
    finally:
        remove_tree(app.top)
