# Heartbeat: which HEARTBEAT.md lines count, where the answer goes, and no turn for an empty list.
import sys

import esp32
import network
from support import remove_tree, run, tempdir, write

from mimi.agent.heartbeat import PERIOD_MIN_S, Heartbeat
from mimi.agent.heartbeat_check import open_items, owner_target
from mimi.bus.message import Bus
from mimi.channels.commands import Commands
from mimi.settings import Config
from mimi.net.wifi import WiFi
from mimi.storage.layout import Flash

SAMPLE = """# Heartbeat

<!-- Lines here are checked every 30 minutes.
- [ ] not an item: inside a comment -->
## Daily
- [ ] Water the plants on Mondays
- [x] Renew the domain
* [X] Done too
  - [ ] Remind me about the dentist at 15:00 UTC

Plain line still counts
"""


class _Holder:
    pass


def _app():
    esp32.set_flash_dir(None)
    network._reset()
    top = tempdir("beat")
    app = _Holder()
    app.top = top
    app.config = Config()
    app.flash = Flash(top + "/data")
    app.flash.seed()
    app.bus = Bus()
    app.wifi = WiFi(app.config)
    app.services = []
    app.channels = {"cli": None, "telegram": None}
    app.console = _Holder()
    app.console.commands = Commands(app, app.console)
    app.heartbeat = Heartbeat(app)
    return app


def test_only_open_items_count():
    assert open_items(SAMPLE) == [
        "- [ ] Water the plants on Mondays",
        "- [ ] Remind me about the dentist at 15:00 UTC",
        "Plain line still counts",
    ]
    assert open_items("# Tasks\n\n## Later\n- [x] done\n<!-- nothing -->\n") == []
    assert open_items("") == [] and open_items(None) == []


def test_an_empty_list_queues_no_turn():
    app = _app()
    try:
        assert run(app.heartbeat.beat()) == 0  # no HEARTBEAT.md at all
        write(app.heartbeat.path, "# Heartbeat\n\n- [x] all done\n")
        assert run(app.heartbeat.beat()) == 0
        assert app.bus.inbound.empty()
    finally:
        remove_tree(app.top)


def test_open_items_become_one_stateless_system_turn():
    app = _app()
    try:
        write(app.heartbeat.path, SAMPLE)
        assert run(app.heartbeat.beat()) == 3
        turn = app.bus.inbound.get_nowait()
        assert turn.channel == "system" and turn.chat_id == "cli:console"
        assert "Water the plants" in turn.content and "HEARTBEAT_OK" in turn.content
        assert "Renew the domain" not in turn.content and "not an item" not in turn.content
        assert turn.meta["session"] is None and turn.meta["quiet_errors"]
        assert run(app.heartbeat.beat()) == -1  # still unanswered: no second turn
        turn.meta["on_reply"]("HEARTBEAT_OK", "reply")
        assert app.heartbeat.silent == 1
        assert run(app.heartbeat.beat()) == 3
    finally:
        remove_tree(app.top)


def test_the_check_is_loaded_only_once_there_is_a_heartbeat_md():
    saved = sys.modules.pop("mimi.agent.heartbeat_check")
    app = _app()
    try:
        assert run(app.heartbeat.beat()) == 0  # no HEARTBEAT.md: a period passes with no code loaded
        assert "mimi.agent.heartbeat_check" not in sys.modules
        write(app.heartbeat.path, "# Heartbeat\n\n- [ ] Water the plants\n")
        assert run(app.heartbeat.beat()) == 1
        assert "mimi.agent.heartbeat_check" in sys.modules
        assert "Water the plants" in app.bus.inbound.get_nowait().content
    finally:
        sys.modules["mimi.agent.heartbeat_check"] = saved
        remove_tree(app.top)


def test_the_owner_is_the_first_allowlisted_telegram_user_else_the_console():
    app = _app()
    try:
        assert owner_target(app) == ("cli", "console")
        app.config.set("tg_config", "allowlist", "555,42")
        assert owner_target(app) == ("cli", "console")  # no bot token: Telegram cannot deliver
        app.config.set("tg_config", "bot_token", "123456:ABCdefGHIjklMNOpqrSTUvwxYZ")
        assert owner_target(app) == ("telegram", "555")
    finally:
        remove_tree(app.top)


def test_the_period_setting():
    app = _app()
    try:
        assert app.heartbeat.period_s() == 1800
        app.config.set("agent_config", "heartbeat_s", "0")
        assert app.heartbeat.period_s() == 0
        app.config.set("agent_config", "heartbeat_s", "5")
        assert app.heartbeat.period_s() == PERIOD_MIN_S
    finally:
        remove_tree(app.top)
