# Roles, tool tiers, autonomy levels, confirmation questions and the Telegram poller while a question waits.
import asyncio

import esp32
from mimi.bus.message import Bus
from mimi.channels.console import Console as CliConsole
from mimi.settings import Config
from mimi.safety import confirm, policy, roles
from mimi.safety.policy import Policy
from mimi.telegram.poller import Poller
from mimi.tools import tool_check, turn
from mimi.tools.loading import load_builtins
from mimi.tools.registry import Registry
from support import NotImported, imported, raises, run


class UserTool:
    name = "feed_cat"
    description = "Feeds the cat."
    schema = {"type": "object", "properties": {}}

    def __init__(self, acting=False, tier=None):
        self.acting = acting
        if tier is not None:
            self.tier = tier
        assert tool_check.check_tool(self) is None  # as the registry adds it: its safety facts filled in

    def run(self, input):
        return "fed"


def _builtins():
    tools = Registry()
    load_builtins(tools)
    return tools.tools


class Commands:
    def add(self, *args):
        pass


class Console:
    commands = Commands()


class Asker:
    """A channel that answers every question with a fixed outcome (or never, for None)."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.asked = []

    async def confirm(self, question, seconds):
        self.asked.append((question.text(), question.asker, seconds))
        if self.outcome is not None:
            question.settle(self.outcome)
        return await question.wait(seconds)


class App:
    def __init__(self, channels=None):
        esp32.set_flash_dir(None)
        self.config = Config()
        self.bus = Bus()
        self.channels = channels or {}
        self.console = Console()


def _turn(app, channel, chat_id, meta=None):
    return turn.of(app.config, channel, chat_id, meta)


def test_tiers_come_from_the_tool_a_tier_attribute_or_whether_the_tool_acts():
    tools = _builtins()
    assert policy.tier_of(tools["get_current_time"]) == roles.OBSERVER
    assert policy.tier_of(tools["gpio_read"]) == policy.tier_of(tools["gpio_write"]) == roles.OPERATOR
    assert policy.tier_of(tools["write_file"]) == policy.tier_of(tools["remember"]) == roles.OWNER
    assert policy.tier_of(UserTool()) == roles.OPERATOR
    assert policy.tier_of(UserTool(acting=True)) == roles.OWNER
    assert policy.tier_of(UserTool(acting=True, tier="observer")) == roles.OBSERVER
    assert policy.tier_of(UserTool(tier="emperor")) == roles.OPERATOR  # unknown tiers are ignored
    assert policy.tier_of(None) == roles.OPERATOR  # an unknown tool: refused to observers before "unknown tool"


def test_default_levels_read_alone_and_report_what_acts():
    tools, config = _builtins(), Config()
    esp32.set_flash_dir(None)
    for name, level in (("get_current_time", policy.AUTONOMOUS), ("gpio_read", policy.AUTONOMOUS),
                        ("gpio_write", policy.REPORT), ("write_file", policy.REPORT),
                        ("cron_add", policy.AUTONOMOUS), ("remember", policy.AUTONOMOUS)):
        assert policy.level_of(config, name, tools[name]) == level, name
    assert policy.level_of(config, "feed_cat", UserTool(tier="owner")) == policy.AUTONOMOUS
    assert policy.level_of(config, "feed_cat", UserTool(acting=True)) == policy.REPORT


def test_a_refused_role_is_told_the_console_command_that_sets_its_channel_s_role():
    app, tools = App(), _builtins()
    gate = Policy(app)
    asked = (("mcp", "claude", "mcp_role <role>"), ("mqtt", "kitchen", "mqtt_role <role>"),
             ("websocket", "observer.web_1", "ws_role <role>"), ("telegram", "9", "tg_role <user_id> <role>"))
    for channel, chat_id, command in asked:
        t = _turn(app, channel, chat_id, {"role": "observer"})
        refusal = run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t))
        assert refusal.endswith("(on its console: {}).".format(command)), refusal
        assert channel == "telegram" or "tg_role" not in refusal
    app.config.set("gw_config", "ws_token", "off")  # the token off: the role of clients without one
    t = _turn(app, "websocket", "observer.web_1", {"role": "observer"})
    assert "(on its console: ws_open_role <role>)." in run(gate.approve("gpio_write", {"pin": 4, "value": 1},
                                                                         tools["gpio_write"], t))


def test_levels_are_stored_only_when_they_differ_from_the_default():
    app, tools = App(), _builtins()
    policy.set_level(app.config, "gpio_write", "confirm", tools["gpio_write"])
    policy.set_level(app.config, "write_file", "blocked", tools["write_file"])
    assert app.config.get("tool_config", "policy") == "gpio_write=confirm,write_file=blocked"
    assert policy.level_of(app.config, "gpio_write", tools["gpio_write"]) == policy.CONFIRM
    policy.set_level(app.config, "gpio_write", "report", tools["gpio_write"])  # back to its default
    assert app.config.get("tool_config", "policy") == "write_file=blocked"
    error = raises(ValueError, policy.set_level, app.config, "gpio_write", "sometimes", tools["gpio_write"])
    assert "autonomous, report, confirm, blocked" in str(error)
    assert policy.parse_levels("a=confirm, b=nonsense,=report,c") == {"a": "confirm"}


def test_a_role_below_the_tier_is_refused_with_the_reason():
    app, tools = App(), _builtins()
    gate = Policy(app)
    t = _turn(app, "telegram", "9", {"user_id": 9, "role": "observer"})
    refusal = run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t))
    assert refusal.startswith("gpio_write was not run: it needs the operator role and the user asking is an observer")
    assert run(gate.approve("get_current_time", {}, tools["get_current_time"], t)) is None
    t = _turn(app, "telegram", "7", {"user_id": 7, "role": "operator"})
    assert run(gate.approve("gpio_read", {"pin": 4}, tools["gpio_read"], t)) is None
    assert "needs the owner role" in run(gate.approve("write_file", {"path": "x", "content": "y"}, tools["write_file"], t))
    t = _turn(app, "cli", "console")  # the console is the owner
    assert run(gate.approve("write_file", {"path": "x", "content": "y"}, tools["write_file"], t)) is None
    # A system turn without a role has the trust of the chat it answers in.
    t = _turn(app, "system", "telegram:42", {"source": "cron"})  # not an allowlisted user: least trusted
    assert "observer" in run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t))
    app.config.set("tg_config", "allowlist", "7,42")
    roles.set_role(app.config, 42, "observer")
    t = _turn(app, "system", "telegram:42", {"source": "cron"})  # an allowlisted observer
    assert "observer" in run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t))
    t = _turn(app, "system", "telegram:7", {"source": "cron"})  # an operator's private chat
    assert run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t)) is None
    assert "owner role" in run(gate.approve("write_file", {"path": "x", "content": "y"}, tools["write_file"], t))
    t = _turn(app, "system", "cli:console", {"source": "heartbeat"})
    assert run(gate.approve("write_file", {"path": "x", "content": "y"}, tools["write_file"], t)) is None
    t = _turn(app, "system", "telegram:-100200", {"source": "cron"})  # a group: least trusted
    assert "observer" in run(gate.approve("get_weather", {"place": "Oslo"}, tools["get_weather"], t))
    t = _turn(app, "system", "telegram:7", {"source": "watcher", "role": "owner"})  # an explicit role wins
    assert run(gate.approve("write_file", {"path": "x", "content": "y"}, tools["write_file"], t)) is None
    assert gate.refused == 6


def test_blocked_never_runs_and_confirm_asks_the_requesting_chat():
    approving, denying = Asker(confirm.APPROVED), Asker(confirm.DENIED)
    app, tools = App({"telegram": approving, "websocket": denying}), _builtins()
    gate = Policy(app)
    policy.set_level(app.config, "gpio_write", "blocked", tools["gpio_write"])
    t = _turn(app, "telegram", "42", {"user_id": 42, "role": "owner"})
    assert "blocked it on this device" in run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t))
    policy.set_level(app.config, "gpio_write", "confirm", tools["gpio_write"])
    assert run(gate.approve("gpio_write", {"pin": 4, "value": 1, "api_key": "hunter2"}, tools["gpio_write"], t)) is None
    text, asker, seconds = approving.asked[0]
    assert text.startswith("May I run gpio_write with {") and text.endswith("}?")
    assert '"api_key": "****"' in text and '"pin": 4' in text and "hunter2" not in text
    assert asker == 42 and seconds == 120
    t = _turn(app, "websocket", "ws_1")
    assert run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t)) == \
        "the user denied running gpio_write; it was not run"
    t = _turn(app, "system", "telegram:42", {"role": "owner", "source": "watcher"})  # a system turn asks its target chat
    assert run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t)) is None
    assert approving.asked[1][1] is None  # no asker: anyone trusted enough may answer
    t = _turn(app, "cli", "console")  # no console channel here: nobody can be asked
    assert "cannot ask" in run(gate.approve("gpio_write", {"pin": 4, "value": 1}, tools["gpio_write"], t))
    assert gate.questions.open == {}


def test_the_confirmation_code_is_loaded_only_once_a_tool_must_be_confirmed():
    modules = ("mimi.safety.confirm",)
    tools = _builtins()
    with NotImported(*modules):
        asker = Asker(confirm.APPROVED)
        app = App({"telegram": asker})
        gate, console = Policy(app), CliConsole(app)
        t = _turn(app, "telegram", "42", {"user_id": 42, "role": "owner"})
        assert run(gate.approve("get_current_time", {}, tools["get_current_time"], t)) is None  # a simple tool runs on its own
        assert run(gate.approve("gpio_write", {"pin": 4}, tools["gpio_write"], t)) is None  # reported afterwards, not asked
        assert not console._answers("status")  # no question open: a typed line is a command
        assert [name for name in modules if imported(name)] == [] and gate.questions is None
        policy.set_level(app.config, "gpio_write", "confirm", tools["gpio_write"])
        assert run(gate.approve("gpio_write", {"pin": 4}, tools["gpio_write"], t)) is None
        assert asker.asked[0][0] == 'May I run gpio_write with {"pin": 4}?'
        assert [name for name in modules if imported(name)] == list(modules)


def test_a_question_nobody_answers_times_out_as_no():
    question = confirm.Questions().ask("gpio_write", "{}", "telegram", "42")
    assert run(question.wait(0.05)) == confirm.TIMED_OUT
    assert not question.settle(confirm.APPROVED)  # the first outcome stays
    assert question.outcome == confirm.TIMED_OUT


def test_questions_are_bounded_found_by_id_and_answered_oldest_first():
    questions = confirm.Questions()
    first = questions.ask("a", "{}", "cli", "console")
    second = questions.ask("b", "x" * 500, "cli", "console")
    assert len(second.input_text) == confirm.INPUT_SHOWN_MAX + 1 and first.id != second.id
    assert questions.get(first.id) is first and questions.oldest("cli") is first
    assert questions.waiting_on("cli") and not questions.waiting_on("telegram")
    first.settle(confirm.DENIED)
    assert questions.oldest("cli") is second
    for _ in range(confirm.QUESTIONS_MAX - 2):
        assert questions.ask("c", "{}", "cli", "console") is not None
    assert questions.ask("d", "{}", "cli", "console") is None  # too many open
    questions.close(first)
    assert questions.get(first.id) is None
    assert [confirm.parse_answer(w) for w in ("Y", " yes ", "n", "No", "maybe")] == [True, True, False, False, None]


def test_a_report_level_call_tells_the_requesting_chat_what_ran():
    app = App({"telegram": Asker(None)})
    gate = Policy(app)
    tools, t = _builtins(), _turn(app, "telegram", "42", {"role": "owner"})
    run(gate.ran("gpio_write", {"pin": 4}, tools["gpio_write"], "GPIO 4 is high\nnow", False, t))
    run(gate.ran("gpio_read", {"pin": 4}, tools["gpio_read"], "1", False, t))  # autonomous: nothing said
    message = app.bus.outbound.get_nowait()
    assert message.channel == "telegram" and message.chat_id == "42" and message.meta == {"kind": "report"}
    assert message.content == '\u2139\ufe0f I ran gpio_write {"pin": 4}: GPIO 4 is high now'
    run(gate.ran("gpio_write", {"pin": 5}, tools["gpio_write"], "x" * 300, True, t))
    failed = app.bus.outbound.get_nowait().content
    assert failed.startswith('\u2139\ufe0f I tried gpio_write {"pin": 5}: it failed: xxx')
    assert len(failed) < 260
    assert app.bus.outbound.empty()


# ---- the poller while a turn waits for a button ----

class FakeBotAPI:
    def __init__(self, batches):
        self.batches = batches  # one list of updates per getUpdates call
        self.offsets = []

    def has_token(self):
        return True

    async def call(self, method, params=None, read_timeout=None):
        self.offsets.append((params["offset"], params["timeout"], tuple(params["allowed_updates"])))
        if self.batches:
            return self.batches.pop(0)
        await asyncio.sleep(3600)


def _message(update_id, text="hi"):
    return {"update_id": update_id, "message": {"text": text}}


def _press(update_id):
    return {"update_id": update_id, "callback_query": {"id": "q", "data": "cf:x:y"}}


def test_while_a_question_waits_the_poller_routes_presses_and_never_confirms_the_unanswered():
    esp32.set_flash_dir(None)
    handled, room, asking = [], [True], [False]

    async def handle(update):
        handled.append(update["update_id"])
        if "callback_query" in update:
            asking[0] = False  # the press answers the question
            return True
        return False  # a message waits for the agent

    async def scenario():
        api = FakeBotAPI([[_message(10)], [_message(10), _message(11), _press(12)], []])
        poller = Poller(api, handle, lambda: asking[0], lambda: room[0])
        task = asyncio.create_task(poller.run())
        await asyncio.sleep(0.05)
        assert handled == [10] and api.offsets == [(0, 30, ("message", "callback_query"))]
        room[0] = False  # the agent's queue is full: message 11 must wait
        asking[0] = True
        poller.question_opened()
        await asyncio.sleep(0.05)
        assert handled == [10, 12]  # 10 not again, 11 left for later, the press routed at once
        assert api.offsets[1] == (10, 0, ("message", "callback_query"))  # held at the unanswered one
        assert poller.offset == 10
        poller.answered(10)
        await asyncio.sleep(0.05)
        assert api.offsets[-1] == (11, 30, ("message", "callback_query"))  # 11 comes again; 12 was handled
        task.cancel()

    run(scenario())
