# Budgets: messages per user a minute, Claude calls an hour, tokens a day with owner notices; usage kept on flash.
import json

import esp32
from mimi.bus.message import Message
from mimi.settings import Config
from mimi.safety import usage_report, usage_store
from mimi.safety.budget import USERS_MAX, Budget, user_key
from mimi.safety.prices import cost_micro_usd, price_of
from mimi.safety.usage_report import report, usd
from mimi.safety.usage_store import MODELS_MAX, OTHER, UsageStore
from support import NotImported, imported, read, remove_tree, run, tempdir, write

JUNE_1 = 1748736000  # 2025-06-01 00:00 UTC
UNSET = 946684800 + 300  # 2000-01-01 00:05: the RTC before NTP set it


class Clock:
    def __init__(self, now=JUNE_1 + 3600):
        self.now = now

    def __call__(self):
        return self.now


class Result:
    def __init__(self, usage, model=None):
        self.usage = usage
        if model is not None:
            self.model = model


def used(input_tokens, output_tokens=0, cache_read=0, cache_write=0):
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write}


def console(text="hi"):
    return Message("cli", "console", text)


def telegram(user, text="hi"):
    return Message("telegram", 555, text, {"user_id": user, "update_id": 1})


def make(folder, clock=None, spawn=None, **settings):
    esp32.set_flash_dir(None)
    config = Config()
    for key in settings:
        config.override("safety_config", key, settings[key])
    clock = clock or Clock()
    store = UsageStore(folder + "/usage.json", clock)
    told = []
    return Budget(config, store, told.append, clock, spawn), told, clock


def test_the_nth_plus_one_message_from_one_user_in_a_minute_is_refused_with_when_to_retry():
    folder = tempdir("budget")
    try:
        budget, _, clock = make(folder, user_per_min=3)
        for _ in range(3):
            assert run(budget.admit(telegram(7))) is None
            clock.now += 5
        refusal = run(budget.admit(telegram(7)))  # 15 s after the first
        assert "at most 3 a minute" in refusal and "try again in 45 s" in refusal
        assert run(budget.admit(telegram(8))) is None  # someone else is not held up
        for _ in range(20):
            assert run(budget.admit(console())) is None  # the owner at the keyboard is exempt
        assert run(budget.admit(Message("system", "cli:console", "cron job"))) is None
        clock.now += 45
        assert run(budget.admit(telegram(7))) is None  # the first message left the minute
    finally:
        remove_tree(folder)


def test_a_gateway_client_counts_by_its_chat_and_refused_messages_do_not_prolong_the_wait():
    folder = tempdir("budget")
    try:
        budget, _, clock = make(folder, user_per_min=1)
        assert user_key(Message("websocket", "ws_1", "x")) == "websocket:ws_1"
        assert user_key(telegram(42)) == "telegram:42"
        assert user_key(console()) is None
        assert run(budget.admit(Message("websocket", "ws_1", "one"))) is None
        assert run(budget.admit(Message("websocket", "ws_2", "one"))) is None
        for _ in range(5):
            clock.now += 10
            assert "try again in" in run(budget.admit(Message("websocket", "ws_1", "again")))
        clock.now += 10  # 60 s after the only admitted message
        assert run(budget.admit(Message("websocket", "ws_1", "now"))) is None
    finally:
        remove_tree(folder)



def test_the_sender_quiet_longest_is_forgotten_when_too_many_are_remembered():
    folder = tempdir("budget")
    try:
        budget, _, clock = make(folder, user_per_min=5)
        for n in range(USERS_MAX + 1):
            clock.now += 1
            assert run(budget.admit(Message("websocket", "ws_{}".format(n), "hi"))) is None
        assert len(budget.senders) == USERS_MAX
        assert "websocket:ws_0" not in budget.senders and "websocket:ws_{}".format(USERS_MAX) in budget.senders
    finally:
        remove_tree(folder)

def test_claude_calls_per_hour_are_refused_in_check_call_until_the_oldest_leaves_the_hour():
    folder = tempdir("budget")
    try:
        budget, _, clock = make(folder, llm_per_hour=3)
        for _ in range(3):
            assert budget.check_call(console()) is None
            clock.now += 600
        assert budget.calls_this_hour() == 3
        refusal = budget.check_call(console())
        assert "as many Claude calls as I may in an hour (3)" in refusal and "30 min" in refusal
        assert "config_set safety_config.llm_per_hour" in refusal
        assert run(budget.admit(telegram(1))) == refusal  # a new turn is refused before it starts
        clock.now += 30 * 60  # the first call is an hour old
        assert budget.check_call(console()) is None
        assert budget.calls_this_hour() == 3
    finally:
        remove_tree(folder)


def test_the_owner_is_warned_once_at_80_percent_and_at_100_the_user_gets_the_polite_stop():
    folder = tempdir("budget")
    try:
        budget, told, clock = make(folder, day_tokens=1000)
        budget.spent(console(), Result(used(500, 100)))
        assert told == [] and run(budget.admit(console())) is None
        budget.spent(console(), Result(used(150, 50, 20, 10)))  # 830: over 80%
        assert len(told) == 1 and "83% of today's token budget" in told[0] and "budget <tokens>" in told[0]
        budget.spent(console(), Result(used(50)))
        assert len(told) == 1  # once a day
        assert budget.check_call(console()) is None
        budget.spent(console(), Result(used(100, 50)))  # 1030
        assert len(told) == 2 and "used up (1030 of 1000 tokens)" in told[1]
        stop = run(budget.admit(telegram(9)))
        assert stop.startswith("I've used today's token budget (1030 of 1000 tokens)")
        assert "budget 2000" in stop and "after midnight UTC (in about 23 h 0 min)" in stop
        assert budget.check_call(console()) == stop  # a tool round in flight stops too
        assert len(told) == 2  # refusing does not repeat the notice
        budget.config.override("safety_config", "day_tokens", 3000)  # the owner raises it
        assert run(budget.admit(telegram(9))) is None and budget.check_call(console()) is None
        budget.spent(console(), Result(used(1500)))
        assert len(told) == 3 and "84% of today's token budget used (2530 of 3000" in told[2]
    finally:
        remove_tree(folder)


def test_the_notice_and_refusal_texts_are_loaded_only_once_80_percent_is_used():
    folder = tempdir("budget")
    try:
        with NotImported("mimi.safety.budget_texts"):
            budget, told, _ = make(folder, day_tokens=1000)
            for _ in range(2):  # two turns well within the budget
                assert run(budget.admit(telegram(7))) is None and budget.check_call(telegram(7)) is None
                budget.spent(telegram(7), Result(used(300, 50)))
            assert told == [] and not imported("mimi.safety.budget_texts")
            budget.spent(telegram(7), Result(used(110)))  # 810 of 1000
            assert "81% of today's token budget" in told[0] and imported("mimi.safety.budget_texts")
    finally:
        remove_tree(folder)


def test_a_limit_lowered_below_todays_use_stops_at_once_and_tells_the_owner_once():
    folder = tempdir("budget")
    try:
        budget, told, _ = make(folder, day_tokens=0)  # 0: no limit
        budget.spent(console(), Result(used(5000, 1000)))
        assert told == [] and run(budget.admit(console())) is None
        budget.config.override("safety_config", "day_tokens", 4000)
        assert "today's token budget" in run(budget.admit(console()))
        assert "today's token budget" in run(budget.admit(console()))
        assert len(told) == 1 and "used up (6000 of 4000" in told[0]
    finally:
        remove_tree(folder)


def test_counts_survive_a_restart_and_the_day_and_month_turn_over():
    folder = tempdir("budget")
    try:
        budget, told, clock = make(folder, day_tokens=1000)
        budget.spent(console(), Result(used(700, 150), "claude-sonnet-4-5"))  # 850: warned, written at once
        saved = json.loads(read(folder + "/usage.json"))
        assert saved["day"] == "2025-06-01" and saved["today"] == {"claude-sonnet-4-5": [700, 150, 0, 0, 0]}
        again, told_again, _ = make(folder, clock, day_tokens=1000)  # a restart
        assert again.store.load() is None
        assert again.store.used_today() == 850
        again.spent(console(), Result(used(10)))
        assert told_again == []  # the 80% notice was already sent today
        clock.now += 86400  # June 2nd
        assert run(again.admit(console())) is None
        saved = json.loads(read(folder + "/usage.json"))  # written at the day change
        assert saved["day"] == "2025-06-02" and saved["today"] == {} and saved["marks"] == {}
        assert usage_store.total(saved["month"]) == 860
        clock.now += 30 * 86400  # July 2nd
        again.spent(console(), Result(used(1)))
        assert again.store.day == "2025-07-02" and usage_store.total(again.store.month) == 1
    finally:
        remove_tree(folder)


def test_the_file_is_written_at_most_once_a_minute_and_a_delayed_write_catches_up():
    folder = tempdir("budget")
    try:
        spawned = []

        def spawn(coro):  # stands in for asyncio.create_task: keeps the coroutine to run later
            spawned.append(coro)
            return coro

        budget, _, clock = make(folder, spawn=spawn, day_tokens=0)
        budget.spent(console(), Result(used(10)))  # the first change is written at once
        assert json.loads(read(folder + "/usage.json"))["today"]["claude-sonnet-4-5"][0] == 10
        clock.now += 59
        budget.spent(console(), Result(used(20)))
        budget.spent(console(), Result(used(30)))
        assert json.loads(read(folder + "/usage.json"))["today"]["claude-sonnet-4-5"][0] == 10
        assert len(spawned) == 1  # one delayed write pending, not one per call
        clock.now += 1
        run(spawned[0])  # sleeps the 1 s left, then writes
        assert json.loads(read(folder + "/usage.json"))["today"]["claude-sonnet-4-5"][0] == 60
        assert budget.flushing is None and not budget.store.dirty
    finally:
        remove_tree(folder)


def test_a_torn_or_corrupt_file_starts_counting_afresh_with_a_warning():
    folder = tempdir("budget")
    path = folder + "/usage.json"
    good = {"v": 1, "day": "2025-06-01", "today": {"m": [1, 2, 3, 4]}, "month": {"m": [1, 2, 3, 4]}, "marks": {}}
    bad = [
        json.dumps(good)[:40],  # torn by a power cut
        "\x00\xff garbage",
        json.dumps(dict(good, today={"m": [1, 2, "3", 4]})),
        json.dumps(dict(good, today={"m": [1, 2, -3, 4]})),
        json.dumps(dict(good, day="June 1st")),
        json.dumps(dict(good, today=[1, 2])),
        json.dumps({"v": 1}),
        json.dumps([1, 2, 3]),
        json.dumps(dict(good, month=dict(("m{}".format(i), [1, 1, 1, 1]) for i in range(MODELS_MAX + 1)))),
        json.dumps(dict(good, marks={"note": "x" * 5000})),
    ]
    try:
        for text in bad:
            write(path, text)
            store = UsageStore(path, Clock())
            warning = store.load()
            assert "unreadable" in warning and "start afresh" in warning, text
            assert store.used_today() == 0 and store.month == {}
        write(path, json.dumps(good))
        store = UsageStore(path, Clock())
        assert store.load() is None and store.used_today() == 10
        write(path + ".tmp", "half a write")  # left by a power cut during a write
        assert store.load() is None and not usage_store.files.exists(path + ".tmp")
    finally:
        remove_tree(folder)


def test_while_the_clock_is_not_set_the_day_does_not_turn():
    folder = tempdir("budget")
    path = folder + "/usage.json"
    try:
        clock = Clock(UNSET)
        store = UsageStore(path, clock)
        assert store.load() is None and store.day is None
        store.add("claude-haiku-4-5", used(100))
        clock.now = JUNE_1 + 60  # NTP set the clock: what was counted belongs to the first real day
        assert store.roll() is False and store.day == "2025-06-01" and store.used_today() == 100
        store.save()
        clock.now = UNSET  # a reboot before NTP answers: the stored day keeps counting
        store = UsageStore(path, clock)
        assert store.load() is None and store.day == "2025-06-01" and store.used_today() == 100
        store.add("claude-haiku-4-5", used(5))
        assert store.used_today() == 105
        budget, _, _ = make(folder, clock, day_tokens=100)
        budget.store = store
        stop = run(budget.admit(console()))
        assert "after midnight UTC." in stop and "in about" not in stop  # no promise of when
        clock.now = JUNE_1 + 86400 + 60
        assert store.roll() is True and store.used_today() == 0 and usage_store.total(store.month) == 105
    finally:
        remove_tree(folder)


def test_spent_counts_under_the_reply_model_else_the_turn_model_else_the_configured_one():
    folder = tempdir("budget")
    try:
        budget, _, _ = make(folder)
        budget.spent(console(), Result(used(1), "claude-opus-4-5-20251101"))
        budget.spent(Message("system", "cli:console", "w", {"model": "claude-haiku-4-5"}), Result(used(2)))
        budget.spent(console(), Result(used(4)))
        budget.spent(console(), Result(None))  # a reply without usage counts nothing, and does not fail
        today = budget.store.today
        assert today == {"claude-opus-4-5-20251101": [1, 0, 0, 0, 0], "claude-haiku-4-5": [2, 0, 0, 0, 0],
                         "claude-sonnet-4-5": [4, 0, 0, 0, 0]}
    finally:
        remove_tree(folder)


def test_the_models_kept_are_bounded_and_no_token_is_lost():
    folder = tempdir("budget")
    try:
        store = UsageStore(folder + "/usage.json", Clock())
        for i in range(20):
            store.add("model-{}".format(i), used(10, 1))
        store.add("x" * 500, used(1))
        assert len(store.today) == MODELS_MAX and len(store.month) == MODELS_MAX
        assert OTHER in store.today and store.used_today() == 221
        assert max(len(name) for name in store.today) <= usage_store.MODEL_NAME_MAX
        store.save()
        again = UsageStore(folder + "/usage.json", Clock())
        assert again.load() is None and again.used_today() == 221
    finally:
        remove_tree(folder)


def test_prices_and_the_usage_report():
    assert price_of("claude-sonnet-4-5-20250929") == (300, 1500)
    assert price_of("claude-opus-4-5") == (500, 2500) and price_of("claude-opus-4-1") == (1500, 7500)
    assert price_of("claude-haiku-4-5") == (100, 500) and price_of("gpt-4") is None
    million = 1000000
    assert usd(cost_micro_usd("claude-sonnet-4-5", [million, 0, 0, 0])) == "$3.0000"
    assert usd(cost_micro_usd("claude-sonnet-4-5", [0, million, 0, 0])) == "$15.0000"
    assert usd(cost_micro_usd("claude-sonnet-4-5", [0, 0, million, 0])) == "$0.3000"  # cache read 0.1x
    assert usd(cost_micro_usd("claude-sonnet-4-5", [0, 0, 0, million])) == "$3.7500"  # cache write 1.25x
    assert usd(cost_micro_usd("claude-haiku-4-5", [1200, 300, 0, 0])) == "$0.0027"
    lines = list(report({"claude-haiku-4-5": [1200, 300, 0, 0], "my-model": [5, 5, 0, 0]}, "today:"))
    assert lines[0] == "today:"
    assert lines[1] == ("  claude-haiku-4-5: input 1200, output 300, cache read 0, cache write 0 = 1500 tokens, "
                        "about $0.0027")
    assert lines[2].startswith("  my-model:") and lines[2].endswith("price unknown")
    assert lines[3] == "  total: 1510 tokens, about $0.0027 plus models of unknown price"
    assert list(report({}, "this month:")) == ["this month:", "  (no tokens used)"]


def test_tokens_today_as_published_is_the_saved_count_and_a_restart_never_lowers_it():
    folder = tempdir()
    clock = Clock()
    store = UsageStore(folder + "/usage.json", clock)
    store.add("claude-sonnet-4-5", used(100, 50))
    assert store.saved_used == 0  # not on the flash yet: not published as such
    store.save()
    assert store.saved_used == 150
    store.add("claude-sonnet-4-5", used(10))  # a crash now loses these 10 ...
    again = UsageStore(folder + "/usage.json", clock)
    again.load()
    assert again.saved_used == 150  # ... and the count after the restart is what was published


def test_thirty_past_days_of_tokens_and_cost_are_kept_for_the_usage_chart():
    folder = tempdir()
    clock = Clock()
    store = UsageStore(folder + "/usage.json", clock)
    for day in range(35):
        store.roll()
        store.add("claude-sonnet-4-5", used(1000 + day, 0))
        clock.now += 86400
    store.roll()
    store.save()
    again = UsageStore(folder + "/usage.json", clock)
    assert again.load() is None
    history = usage_report.history(again, 30)
    assert len(history) == 30 and history[-1][1:] == [0, 0]  # today: nothing yet
    assert [row[1] for row in history[:-1]] == [1000 + day for day in range(6, 35)]
    assert history[-2][2] == cost_micro_usd("claude-sonnet-4-5", [1034, 0, 0, 0, 0])
    assert len(again.days) == usage_store.DAYS_KEPT
