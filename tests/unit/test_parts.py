# The app's optional parts (mimi/parts.py): made at the first part(name), never by a read, started late once,
# never in safe mode; their making's code let go once done.
import asyncio

from stub_app import stub_app
from support import NotImported, imported, remove_tree, run

from mimi.health.watchdog import Health
from mimi.tools.registry import Registry


def _app(tag):
    app = stub_app(tag, parts=True)
    app.registry = Registry(app)
    return app


def _safe_mode(app):
    """The app's real health, on a boot after 3 early crashes: safe mode runs the gateway only."""
    app.gateway = object()
    app.health = Health(app)
    app.health.safe_mode, app.health.crashes_at_boot = True, 3
    return app.health


def test_a_part_is_made_at_its_first_need_and_starts_with_the_services_or_at_once():
    app = _app("parts")
    try:
        assert app.cron is None and not app.services  # a read makes nothing
        cron = app.part("cron")  # before the network services start: it joins them, no task of its own
        assert app.part("cron") is cron and app.cron is cron and app.services == [cron] and app.tasks == []
        assert not imported("mimi.parts")  # let go once the part is made
        app.services_started = True

        async def later():
            heartbeat = app.part("heartbeat")  # after: started at once, its task kept
            assert app.services == [cron, heartbeat] and len(app.tasks) == 1
            assert app.start_late(heartbeat) is None and len(app.tasks) == 1  # a service starts once
            await asyncio.sleep(0)  # the task runs (its first wait), then stops with the test
            app.tasks[0].cancel()

        run(later())
        try:
            app.part("not_a_part")
            raise AssertionError("an unknown part was made")
        except AttributeError:
            pass
    finally:
        remove_tree(app.top)


def test_safe_mode_starts_no_late_service_and_says_why():
    app = _app("parts-safe")
    try:
        health = _safe_mode(app)
        app.services_started = True
        cron = app.part("cron")  # a tool or a command needs it: made, but not run on this boot
        assert app.services == [cron] and app.tasks == []
        why = app.start_late(cron)
        assert why == ("the board is in safe mode (3 crashes soon after boot): console and gateway only; "
                       "restart to leave it")
        assert app.tasks == [] and health.held_back(app.gateway) is None  # the gateway runs in safe mode
    finally:
        remove_tree(app.top)


def test_mqtt_is_none_and_unloaded_without_a_broker_and_held_back_in_safe_mode():
    app = _app("parts-mqtt")
    try:
        with NotImported("mimi.mqtt.channel"):
            assert app.part("mqtt") is None and not imported("mimi.mqtt.channel")  # off: nothing of it loaded
            assert not imported("mimi.parts")
        _safe_mode(app)
        app.services_started = True
        app.config.set("mqtt_config", "host", "192.168.1.10")  # what mqtt_set saves
        channel = app.part("mqtt")  # made now, as mqtt_set does
        assert app.services == [channel] and app.channels["mqtt"] is channel and app.tasks == [] and not channel.running  # never started
        assert "mqtt_publish" in app.registry.tools
        why = app.start_late(channel)
        assert why.startswith("the board is in safe mode (3 crashes soon after boot)")
        assert app.tasks == [] and app.config.get("mqtt_config", "host") == "192.168.1.10"
    finally:
        remove_tree(app.top)
