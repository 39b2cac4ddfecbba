# Cron and heartbeat from the outside: jobs the model schedules fire, survive reboots, can be removed;
# the heartbeat costs nothing on an empty list and stays silent on HEARTBEAT_OK.
import json
import time

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY
from tests.e2e.conftest import TG_TOKEN as TOKEN
from tests.e2e.test_telegram import OWNER

HEARTBEAT = """# Heartbeat

## Every day
- [x] Renew the domain
- [ ] Water the plants on Mondays
"""


def _user_text(request):
    content = request["body"]["messages"][-1]["content"]
    return "\n".join(b.get("text", "") for b in content) if isinstance(content, list) else content


def _jobs(flash):
    path = flash / "data" / "cron.json"
    return json.loads(path.read_text())["jobs"] if path.exists() else []


def _booted(boot):
    dev = boot()
    assert "saved" in dev.command("set_api_key " + API_KEY)
    return dev


def test_a_job_fires_in_the_chat_that_asked_survives_a_restart_and_can_be_removed(boot, fake, flash):
    dev = _booted(boot)
    fake.script(
        tool_use("cron_add", {"schedule": "in", "seconds": 2, "message": "Tell the owner to stretch"}),
        text("I'll remind you."),
        text("Time to stretch!"),
    )
    assert "I'll remind you." in dev.command("chat remind me in 2 seconds to stretch", timeout=30)
    dev.expect(r"mimi: Time to stretch!", timeout=20)
    fired = fake.wait_requests(3)[2]
    said = _user_text(fired)
    assert "Tell the owner to stretch" in said and "[cron job 1" in said and "via system" in said
    assert _jobs(flash) == []  # a one-shot is gone once it ran

    fake.script(
        tool_use("cron_add", {"schedule": "every", "seconds": 3600, "message": "Ask how the owner is"}),
        text("Every hour, then."))
    dev.command("chat ask me how I am every hour", timeout=30)
    assert "every 3600 s" in dev.command("cron_list") and "Ask how the owner is" in dev.command("cron_list")
    dev.stop()

    dev = boot()  # a power cycle: the job comes back from cron.json
    listed = dev.command("cron_list")
    assert "2  every 3600 s" in listed and "-> cli:console  as owner  Ask how the owner is" in listed  # role kept
    assert "removed cron job 2" in dev.command("cron_remove 2")
    assert "no cron jobs" in dev.command("cron_list")
    assert "no cron job with id 2" in dev.command("cron_remove 2")
    dev.stop()
    assert "no cron jobs" in boot().command("cron_list")
    assert len(fake.requests) == 5  # two tool turns of two calls, one reminder: nothing more


def test_a_one_shot_missed_while_off_runs_once_after_boot(boot, fake, flash):
    _booted(boot).stop()  # the key is saved in NVS
    due = int(time.time()) - 300
    job = {"id": 7, "kind": "at", "seconds": 0, "next": due, "message": "Say the cake is ready",
           "channel": "cli", "chat_id": "console"}
    (flash / "data" / "cron.json").write_text(json.dumps({"next_id": 8, "jobs": [job]}))
    fake.script(text("The cake is ready!"))
    dev = boot()
    dev.expect(r"mimi: The cake is ready!", timeout=20)
    assert "Say the cake is ready" in _user_text(fake.wait_requests(1)[0])
    assert "no cron jobs" in dev.command("cron_list")
    time.sleep(6)  # longer than a check period: it does not run again
    dev.stop()
    boot()
    time.sleep(3)
    assert len(fake.requests) == 1


def test_a_job_asked_for_on_telegram_answers_on_telegram(boot, fake, tg, flash):  # noqa: F811
    dev = boot("--telegram-api", tg.url)
    for line in ("set_api_key " + API_KEY, "set_tg_token " + TOKEN, "tg_allow {}".format(OWNER)):
        dev.command(line)
    fake.script(
        tool_use("cron_add", {"schedule": "in", "seconds": 2, "message": "Remind the owner to call mum"}),
        text("Will do."),
        text("Time to call mum!"),
    )
    tg.user_message(OWNER, "remind me in 2 s to call mum")
    assert tg.wait_for(lambda: len(tg.sent(OWNER)) >= 2, 30)
    assert [m["shown"] for m in tg.sent(OWNER)] == ["Will do.", "Time to call mum!"]
    # The reminder is part of that chat's conversation, so "done, thanks" makes sense afterwards.
    lines = (flash / "data" / "sessions" / "telegram_42.jsonl").read_text().splitlines()
    contents = [json.loads(line)["content"] for line in lines]
    assert contents[-1] == "Time to call mum!" and "Remind the owner to call mum" in contents[-2]
    assert TOKEN not in dev.output


def test_heartbeat_with_nothing_open_makes_no_llm_call(device, fake, flash):
    assert "no open items" in device.command("heartbeat_trigger")
    (flash / "data" / "HEARTBEAT.md").write_text("# Heartbeat\n\n## Done\n- [x] Renew the domain\n\n")
    assert "no open items" in device.command("heartbeat_trigger")
    assert fake.requests == []


def test_heartbeat_switched_off_at_boot_is_made_at_the_trigger(boot, fake, flash):
    dev = _booted(boot)
    assert "heartbeat_s = 0 (saved" in dev.command("config_set agent_config.heartbeat_s 0")
    dev.stop()
    dev = boot()  # off at boot: only the command is there; the heartbeat itself is made when asked for
    assert "check HEARTBEAT.md now" in dev.command("help heartbeat_trigger")
    assert "no open items" in dev.command("heartbeat_trigger")
    (flash / "data" / "HEARTBEAT.md").write_text(HEARTBEAT)
    fake.script(text("HEARTBEAT_OK"))
    assert "nothing due" in dev.command("heartbeat_trigger", timeout=30)
    assert "heartbeat_s = 1800 (saved" in dev.command("config_set agent_config.heartbeat_s 1800")
    assert len(fake.requests) == 1


def test_heartbeat_ok_is_not_sent_and_other_answers_reach_the_owner(device, fake, flash):
    (flash / "data" / "HEARTBEAT.md").write_text(HEARTBEAT)
    fake.script(text("HEARTBEAT_OK"))
    out = device.command("heartbeat_trigger", timeout=30)
    assert "nothing due" in out and "mimi:" not in out
    said = _user_text(fake.wait_requests(1)[0])
    assert "Water the plants on Mondays" in said and "Renew the domain" not in said
    assert "HEARTBEAT_OK" in said

    fake.script(text("It's Monday: water the plants!"))
    out = device.command("heartbeat_trigger", timeout=30)
    assert "mimi: It's Monday: water the plants!" in out and "answer sent to cli:console" in out
    # The checks stay out of every chat's history.
    sessions = flash / "data" / "sessions"
    saved = "".join(p.read_text() for p in sessions.iterdir()) if sessions.exists() else ""
    assert "HEARTBEAT" not in saved and "water the plants" not in saved
