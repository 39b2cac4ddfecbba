# A device app for unit tests of the layers above the core: flash, config, bus, WiFi, console commands,
# the system channel and channels that record what they are asked to send. Tests add the layer they test.
import esp32
import network
from support import tempdir

from mimi import heap


class Holder:
    pass


class RecordingChannel:
    """Records every message a channel is asked to send (a channel that does not stream: channels.Channel's
    defaults)."""

    streams = False
    confirm = None

    def __init__(self):
        self.sent = []

    async def send(self, message):
        self.sent.append(message)


class NormalBoot:
    """The app's health on a normal boot: every network service may run (safe mode: watchdog.Health)."""

    def held_back(self, service):
        return None

    def startable(self, services):
        return services


class StubApp(Holder):
    """The app's wiring as App has it (mimi/app.py): its optional parts None until a test sets one or part()
    finds it; add_channel, add_service; deliver() hands a rule's /command to the rules before the bus."""

    cron = watchers = heartbeat = mqtt = mcp_client = None

    def part(self, name):
        return getattr(self, name)

    def add_channel(self, channel):
        self.channels[channel.name] = channel
        return channel

    def add_service(self, service):
        if service not in self.services:
            self.services.append(service)
        return service

    def rules(self):
        return self.watchers.rules if self.watchers is not None else None

    async def deliver(self, message):
        rules = self.rules()
        if rules is None or not await rules.take(message):
            await self.bus.inbound.put(message)


class PartsApp(StubApp):
    """part() makes cron, watchers, heartbeat and mqtt at the first call, as App's does (mimi/parts.py, in a part's
    scope: let go after)."""

    def part(self, name):
        made = getattr(self, name)
        if made is None:
            with heap.scope("part"):
                from mimi import parts

                made = parts.made(self, name)
        return made

    def start_late(self, service):
        with heap.scope("part"):
            from mimi import parts

            return parts.start_late(self, service)

    def start(self, service):  # as App.start: a service's task, once
        import asyncio

        if service not in self.running:
            self.running.append(service)
            self.tasks.append(asyncio.create_task(service.run()))


def _parts_app():
    app = PartsApp()
    app.health, app.tasks, app.services_started = NormalBoot(), [], False
    app.running, app.core_started = [], False
    return app


def stub_app(tag, channel_type=RecordingChannel, parts=False):
    """The app, its files under app.top (remove_tree(app.top) when done); parts: a PartsApp, whose part() makes
    cron, watchers, heartbeat and mqtt at their first need (health: NormalBoot, the services not started yet)."""
    from mimi.bus.message import Bus
    from mimi.channels.commands import Commands
    from mimi.channels.system import SystemChannel
    from mimi.settings import Config
    from mimi.net.wifi import WiFi
    from mimi.storage.layout import Flash

    esp32.set_flash_dir(None)
    network._reset()
    app = _parts_app() if parts else StubApp()
    app.top = tempdir(tag)
    app.config = Config()
    app.flash = Flash(app.top + "/data")
    app.flash.seed()
    app.bus = Bus()
    app.wifi = WiFi(app.config)
    app.services = []
    app.channels = {"cli": channel_type(), "telegram": channel_type(), "websocket": channel_type()}
    app.console = Holder()
    app.console.commands = Commands(app, app.console)
    app.system = app.add_channel(SystemChannel(app))
    app.models = Holder()
    app.models.answered = None  # no turn answered yet (llm/models.py)
    app.outputs = {}  # the pins the tools drive (app.py)
    return app


def typing(app):
    """typed(line): what the app's console prints for one command line (platform.console_write taken meanwhile)."""
    from support import run

    from mimi import platform

    def typed(line):
        said, saved = [], platform.console_write
        platform.console_write = said.append
        try:
            run(app.console.commands.execute(line))
        finally:
            platform.console_write = saved
        return "".join(said)

    return typed
