# Startup in MimiClaw's order: config, flash, bus, stores, WiFi, Claude, agent, console, then the network.
import asyncio

from mimi import VERSION, mqtt, platform, watch
from mimi.agent import skills
from mimi.agent.context import Context
from mimi.agent.heartbeat import Heartbeat
from mimi.agent.loop import Agent
from mimi.bus.message import Bus
from mimi.channels.console import Console
from mimi.channels.dispatch import Dispatcher
from mimi.channels.owner import Owner
from mimi.channels.system import SystemChannel
from mimi.config import Config
from mimi.cron.service import Cron
from mimi.gateway.server import Gateway
from mimi.health.watchdog import Health
from mimi.llm.claude import Claude
from mimi.net import tls
from mimi.net.onboarding import Onboarding
from mimi.net.wifi import WiFi
from mimi.ota.commands import Updates
from mimi.safety import audit, breaker, budget, policy  # [safety]
from mimi.storage import space
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory
from mimi.storage.sessions import Sessions
from mimi.telegram.channel import Telegram
from mimi.tools.registry import Registry

DATA_ROOT = "/data"
TOOLS_DIR = "/tools"  # the owner's tool_<name>.py files
WWW_DIR = "/www"  # the web chat page
CERT_DIRS = ("/certs",)  # shipped CA certificates; the owner's own go in <data>/certs
GC_PERIOD_S = 10
SERVICE_SETTLE_S = 0.1


class App:
    def __init__(self, data_root=DATA_ROOT, cert_dirs=CERT_DIRS, overrides=None, tools_dir=TOOLS_DIR,
                 www_dir=WWW_DIR):
        self.started_ms = platform.ticks_ms()
        self.www_dir = www_dir
        self.config = Config()
        for ns, key, value in overrides or ():
            self.config.override(ns, key, value)
        self.flash = Flash(data_root)
        created = self.flash.seed()
        if created:
            print("flash: first boot, wrote {}".format(", ".join(created)))
        tls.configure(list(cert_dirs) + [self.flash.certs_dir])
        self.bus = Bus()
        self.owner = Owner(self)  # notices for the owner: console and the owners' Telegram chats
        self.memory = Memory(self.flash)
        self.sessions = Sessions(self.flash.sessions_dir)
        self.wifi = WiFi(self.config)
        self.claude = Claude(self.config)
        self.console = Console(self)
        self.channels = {"cli": self.console}
        self.registry = Registry(self)
        self.breaker, self.audit = breaker.setup(self), audit.setup(self)  # [safety] breakers, audit log
        self.space = space.setup(self, self.audit.folder)  # a full flash gives up old chats, notes, audit days
        self.policy = policy.setup(self)  # [safety] roles, tool tiers, autonomy levels, confirmations
        self.agent = Agent(self.bus, self.claude, Context(self.flash, self.memory), self.sessions,
                           self.channels, self.wifi.is_up, self.registry)
        self.budget = budget.setup(self)  # [safety] rate limits, call and token budgets, usage
        self.dispatcher = Dispatcher(self.bus, self.channels)
        self.tasks = []
        # Network services: each registers its channel in self.channels and its console commands.
        self.services, self.services_started = [], False
        self.health, self.updates = Health(self), Updates(self)  # watchdog and safe mode; ota commands
        self.gateway = Gateway(self)
        self.telegram = Telegram(self)
        self.onboarding = Onboarding(self)  # the setup access point when no WiFi is saved
        self.system, self.cron, self.heartbeat = SystemChannel(self), Cron(self), Heartbeat(self)
        watch.setup(self)  # app.watchers: sources judged by the agent, with their own caps (made at the first watcher)
        mqtt.setup(self)  # app.mqtt: the mqtt_* commands; the channel only once a broker is set
        skills.setup(self)
        # Tools last: their setup(app) may add console commands and use every layer above.
        self.registry.load_builtins()
        self.registry.discover(tools_dir)

    def missing(self):
        cfg = self.config
        gaps = []
        if not cfg.is_set("llm_config", "api_key"):
            gaps.append("Anthropic API key (set_api_key <key>)")
        if not cfg.get("wifi_config", "ssid") and not self.wifi.is_up():
            gaps.append("WiFi (wifi_set <ssid> <password>)")
        return gaps

    async def _collect_garbage(self):
        while True:
            await asyncio.sleep(GC_PERIOD_S)
            platform.collect()

    async def _start_services(self):
        for service in self.health.startable(self.services):  # safe mode: the gateway only
            self.tasks.append(asyncio.create_task(service.run()))
        self.services_started = True  # a service made later (the first watcher) starts at once
        await asyncio.sleep(SERVICE_SETTLE_S)  # let services open their ports and say so first
        print("ready: network up, agent listening")

    async def _start_services_when_up(self):
        # The link may come up long after boot: the setup page, wifi_set, backoff retries.
        await self.wifi.up.wait()
        await self._start_services()

    async def main(self):
        print("MimiClaw-Py {} starting; data on {}".format(VERSION, self.flash.root))
        self.tasks.append(asyncio.create_task(self.console.run()))  # works with no WiFi and no keys
        self.tasks.extend(self.health.start_core())  # agent (safe mode: a stand-in) and dispatcher, watched
        self.tasks.append(asyncio.create_task(self._collect_garbage()))
        gaps = self.missing()
        if gaps:
            print("setup needed: " + "; ".join(gaps))
        if await self.wifi.connect():
            await self._start_services()
        else:
            print("no network yet: the console works; configure WiFi with wifi_set")
            self.tasks.append(asyncio.create_task(self._start_services_when_up()))
        while True:  # the main loop stays alive
            self.health.tick()  # feeds the watchdog while the agent and dispatcher are healthy
            await asyncio.sleep(1)


def run(**options):
    app = App(**options)
    asyncio.run(app.main())
