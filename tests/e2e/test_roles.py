# Roles and tool tiers from the outside: who may run which tool, and what the model and the user see.
import json

import pytest

from host_sim.fake_anthropic import text, tool_use
from tests.e2e.conftest import API_KEY, TG_TOKEN

TOKEN = TG_TOKEN
OWNER, OPERATOR, OBSERVER = 42, 7, 9


@pytest.fixture
def bot(boot, tg):
    dev = boot("--telegram-api", tg.url)
    dev.command("set_api_key " + API_KEY)
    dev.command("set_tg_token " + TOKEN)
    dev.command("tg_allow {} owner".format(OWNER))
    dev.command("tg_allow {}".format(OPERATOR))
    dev.command("tg_allow {} observer".format(OBSERVER))
    dev.command("gpio_allow 4")
    return dev


def _shown(tg, chat):
    return [m["shown"] for m in tg.sent(chat)]


def _tool_result(request):
    return request["body"]["messages"][-1]["content"][0]


def test_the_allowlist_shows_roles_and_tg_role_changes_them(bot):
    assert "42 (owner), 7 (operator), 9 (observer)" in bot.command("tg_allowlist")
    assert "is now owner" in bot.command("tg_role 9 owner")
    assert "9 (owner)" in bot.command("tg_allowlist")
    assert "not on the allowlist" in bot.command("tg_role 555 owner")
    assert "role must be one of" in bot.command("tg_role 9 king")
    bot.command("tg_deny 9")
    bot.command("tg_allow 9")
    assert "9 (operator)" in bot.command("tg_allowlist")  # removing a user forgets their role


def test_an_observers_gpio_request_is_refused_and_the_model_is_told_why(bot, tg, fake):
    fake.script(tool_use("gpio_write", {"pin": 4, "value": 1}), text("Sorry, you may not switch the light."))
    tg.user_message(OBSERVER, "turn on the light")
    assert tg.wait_for(lambda: "Sorry, you may not switch the light." in _shown(tg, OBSERVER), 30), bot.output[-2000:]
    result = _tool_result(fake.wait_requests(2)[1])
    assert result["is_error"] is True
    assert "gpio_write was not run: it needs the operator role and the user asking is an observer" in result["content"]
    assert _shown(tg, OBSERVER) == ["Sorry, you may not switch the light."]  # nothing ran, nothing reported


def test_an_operator_switches_gpio_with_a_report_but_may_not_write_files(bot, tg, fake):
    fake.script(tool_use("gpio_write", {"pin": 4, "value": 1}), text("The light is on."),
                tool_use("write_file", {"path": "files/x.txt", "content": "hi"}), text("I may not write files."))
    tg.user_message(OPERATOR, "turn on the light")
    assert tg.wait_for(lambda: "The light is on." in _shown(tg, OPERATOR), 30), bot.output[-2000:]
    shown = _shown(tg, OPERATOR)
    assert shown[0].startswith("\u2139\ufe0f I ran gpio_write {") and '"pin": 4' in shown[0]  # reported first
    assert _tool_result(fake.wait_requests(2)[1]) ["is_error"] is False
    tg.user_message(OPERATOR, "write a file")
    assert tg.wait_for(lambda: "I may not write files." in _shown(tg, OPERATOR), 30)
    result = _tool_result(fake.wait_requests(4)[3])
    assert result["is_error"] is True and "needs the owner role" in result["content"]


def test_the_owner_writes_files_and_console_users_are_owners(bot, tg, fake, flash):
    fake.script(tool_use("write_file", {"path": "files/x.txt", "content": "hi"}), text("Written."))
    tg.user_message(OWNER, "write a file")
    assert tg.wait_for(lambda: "Written." in _shown(tg, OWNER), 30), bot.output[-2000:]
    assert (flash / "data" / "files" / "x.txt").read_text() == "hi"
    assert "I ran write_file" in _shown(tg, OWNER)[0]  # owner-tier tools that act report by default
    out = bot.command('tool_exec write_file \'{"path": "files/y.txt", "content": "yo"}\'')
    assert "error" not in out, out
    assert (flash / "data" / "files" / "y.txt").read_text() == "yo"


def test_tool_policy_lists_tiers_and_levels_and_blocks_a_tool(bot, tg, fake):
    listing = bot.command("tool_policy")
    rows = {line.split()[0]: line.split()[1:] for line in listing.splitlines() if line.startswith("  ")}
    assert rows["tool"] == ["tier", "level"]  # the header
    assert rows["get_current_time"] == ["observer", "autonomous"]
    assert rows["gpio_read"] == ["operator", "autonomous"] and rows["gpio_write"] == ["operator", "report"]
    assert rows["write_file"] == ["owner", "report"]
    assert "level must be one of" in bot.command("tool_policy gpio_read sometimes")
    assert "no tool named" in bot.command("tool_policy warp_drive blocked")
    assert "gpio_read is now blocked" in bot.command("tool_policy gpio_read blocked")
    assert "tier operator, level blocked" in bot.command("tool_policy gpio_read")
    fake.script(tool_use("gpio_read", {"pin": 4}), text("Blocked, sorry."))
    tg.user_message(OWNER, "read pin 4")
    assert tg.wait_for(lambda: "Blocked, sorry." in _shown(tg, OWNER), 30)
    result = _tool_result(fake.wait_requests(2)[1])
    assert result["is_error"] is True and "blocked it on this device" in result["content"]
    bot.command("tool_policy gpio_read autonomous")
    assert "tier operator, level autonomous" in bot.command("tool_policy gpio_read")


def test_an_operators_cron_job_answering_in_the_console_acts_as_the_operator(bot, tg, fake, flash):
    job = {"schedule": "in", "seconds": 2, "message": "Write the file", "channel": "cli", "chat_id": "console"}
    fake.script(tool_use("cron_add", job), text("Scheduled."),
                tool_use("write_file", {"path": "files/z.txt", "content": "owned"}), text("I could not write it."))
    tg.user_message(OPERATOR, "every so often write a file for me, answering in the console")
    assert tg.wait_for(lambda: "Scheduled." in _shown(tg, OPERATOR), 30), bot.output[-2000:]
    # The job keeps the role of whoever asked for it: what cron_add answered, then what the job did. Nothing here
    # reads the job list while the job is due (it runs 2 s after cron_add and is gone once it ran).
    added = json.loads(_tool_result(fake.wait_requests(2)[1])["content"])
    assert (added["answer_in"], added["acts_as"]) == ("cli:console", "operator"), added
    bot.expect("I could not write it.", 30)  # the job's answer reaches the console it named
    result = _tool_result(fake.wait_requests(4)[3])
    assert result["is_error"] is True
    assert "write_file was not run: it needs the owner role and the user asking is an operator" in result["content"]
    assert not (flash / "data" / "files" / "z.txt").exists()
    assert "no cron jobs" in bot.command("cron_list")  # a one-shot job is gone once it ran
