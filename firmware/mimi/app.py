# Startup in MimiClaw's order: config, flash, bus, stores, WiFi, Claude, agent, console, then the network; and
# the wiring: the app makes each service and channel, adds it (add_channel, add_service) and its console lines,
# and hands each what it needs. No part registers itself.
# Parts a board may never use (cron, watchers, heartbeat, mqtt, mcp_client) are None until part(name) makes
# one (parts.py, loaded then and let go) and start_late runs it, with the other network services or at once when
# they already run (safe mode: not at all, and start_late says why). At boot each package's setup(app) asks for
# its part only when its file or setting needs it; later a tool, a console command or a setting switched on does.
# Reading app.<part> never makes it. app.mqtt stays None while no broker is set. Not network services, and made by
# their own layers: app.updates (ota/, at the first ota command), app.onboarding (while no WiFi is saved).
import asyncio

from mimi import VERSION, board, heap, platform
from mimi.agent import skills
from mimi.agent.context import Context
from mimi.agent.loop import Agent
from mimi.bus.message import Bus
from mimi.channels.console import Console
from mimi.channels.dispatch import Dispatcher
from mimi.channels.owner import Owner
from mimi.channels.system import SystemChannel
from mimi.settings import Config
from mimi.gateway import server as gateway_server
from mimi.health import memory_errors
from mimi.health.watchdog import HEAP_SAMPLE_S, Health
from mimi.llm import COMMANDS as LLM_COMMANDS
from mimi.llm.models import Models
from mimi.net import tls
from mimi.net.wifi import WiFi
from mimi.safety import audit, breaker, budget, policy  # [safety]
from mimi.platform import const, log
from mimi.storage import space
from mimi.storage.layout import Flash
from mimi.storage.memory import Memory
from mimi.storage.sessions import Sessions
from mimi.telegram import channel as telegram_channel
from mimi.tools.registry import Registry

DATA_ROOT = "/data"
TOOLS_DIR = "/tools"  # the owner's tool_<name>.py files
WWW_DIR = "/www"  # the web chat page
CERT_DIRS = ("/certs",)  # shipped CA certificates; the owner's own go in <data>/certs
_GC_PERIOD_S = const(10)  # seconds between the main loop's collections
SERVICE_SETTLE_S = 0.1
# The console commands (channels/commands.py add_lines): a str constant stays in flash.
_COMMANDS = "\nheartbeat_trigger\theartbeat_trigger\t0\t0\tcheck HEARTBEAT.md now\tmimi.agent.heartbeat:now(app)\n"


class App:
    def __init__(self, data_root=DATA_ROOT, cert_dirs=CERT_DIRS, overrides=None, tools_dir=TOOLS_DIR,
                 www_dir=WWW_DIR):
        with heap.scope("boot"):  # what runs once a boot (the tools' loading, boot parts) is let go at its end
            self._boot(data_root, cert_dirs, overrides, tools_dir, www_dir)
        heap.choose()  # the boot's own blocks placed: the heap's policy from the board (mimi/heap.py)
        self.booted = True
        if board.small():  # the boot's own blocks placed first (from .mpy files their code is heap too)
            _prepare_gate()
            _intern_names(self)

    def _boot(self, data_root, cert_dirs, overrides, tools_dir, www_dir):
        self.started_ms = platform.ticks_ms()
        self.www_dir = www_dir
        self.config = Config()
        self.cron = self.watchers = self.heartbeat = self.mqtt = self.mcp_client = None  # part(name) makes them
        self.matrix = self.discord = None  # chat apps: made once configured (parts.py)
        self.outputs = {}  # pin number -> machine.Pin a tool drives as an output: the board's, outliving tools' code
        if overrides:
            self.config.from_command_line(overrides)
        self.booted = self.names_interned = False
        if board.follow(self.config, self._small_board_on):  # the heap at boot, before anything takes from it
            log("board: small-board mode ({})".format(board.describe()))
        self.flash = Flash(data_root)
        created = self.flash.seed()
        if created:
            log("flash: first boot, wrote {}".format(", ".join(created)))
        tls.configure(list(cert_dirs) + [self.flash.certs_dir])
        self.bus = Bus()
        self.owner = Owner(self)  # notices for the owner: console and the owners' Telegram chats
        memory_errors.use(self.owner)  # where a MemoryError a loop survived is told
        self.memory = Memory(self.flash)
        self.sessions = Sessions(self.flash.sessions_dir)
        self.wifi = WiFi(self.config)
        self.models = Models(self.config)  # claude, or the chain of model profiles (llm_use)
        self.console = Console(self)
        self.channels = {}  # name -> channels/__init__.py Channel: add_channel
        self.add_channel(self.console)
        self.registry = Registry(self)
        self.breaker, self.audit = breaker.setup(self), audit.setup(self)  # [safety] breakers, audit log
        self.space = space.setup(self, self.audit.folder)  # a full flash gives up old chats, notes, audit days
        self.policy = policy.setup(self)  # [safety] roles, tool tiers, autonomy levels, confirmations
        self.agent = Agent(self.bus, self.models, Context(self.flash, self.memory), self.sessions,
                           self.channels, self.wifi.is_up, self.registry, self.config)
        self.budget = budget.setup(self)  # [safety] rate limits, call and token budgets, usage
        self.budget.free_answers = self.models.has_free  # a free profile answers once the budget is spent
        self.models.budget_spent, self.models.tell = self.budget.over, self.owner.tell
        self.console.commands.add_lines(LLM_COMMANDS)  # llm_add, llm_use... (llm/commands.py when typed)
        self.dispatcher = Dispatcher(self.bus, self.channels)
        self.tasks = []
        # Network services: add_service; their channels: add_channel.
        self.services, self.services_started = [], False
        self.running, self.core_started = [], False  # services whose task runs; True once main() runs
        # Parts a board may never use are made at their first read (the header, parts.py): the heap diet.
        self.health = Health(self)  # watchdog and safe mode
        from mimi import ota  # a boot part: here, not at the top, so the boot's scope lets it go

        ota.setup(self)  # the ota commands; app.updates (their code) at the first one typed
        self.gateway = self.add_service(self.add_channel(gateway_server.Gateway(self)))
        self.console.commands.add_lines(gateway_server.COMMANDS)  # status: the gateway's line after the console's
        self.telegram = self.add_service(self.add_channel(telegram_channel.Telegram(self)))
        self.console.commands.add_lines(telegram_channel.COMMANDS)
        self.onboarding = None  # the setup access point, made while no WiFi is saved
        self._onboarding_if_no_wifi("wifi_config", "ssid")
        self.config.subscribe(self._onboarding_if_no_wifi)
        self.system = self.add_channel(SystemChannel(self))
        from mimi import cron, discord, matrix, mqtt, watch  # boot parts, let go as ota

        cron.setup(self)  # app.cron: made now when cron.json holds jobs, else at its first use
        self.console.commands.add_lines(_COMMANDS)  # heartbeat_trigger
        self._heartbeat_if_on("agent_config", "heartbeat_s")  # app.heartbeat: made now while heartbeat_s > 0,
        self.config.subscribe(self._heartbeat_if_on)  # else when switched on or at heartbeat_trigger
        watch.setup(self)  # app.watchers: sources judged by the agent, with their own caps (made at the first watcher)
        mqtt.setup(self)  # the mqtt_* commands; app.mqtt, the channel, only once a broker is set
        matrix.setup(self)  # the matrix_* commands; app.matrix only once the board is logged in
        discord.setup(self)  # the discord_* commands; app.discord only once a bot token is set
        _boot_parts(self)  # the mcp_* and voice commands (their packages let go after): MCP's server at the first
        # POST /mcp, its client at its first use; speech code only when a voice note arrives or a reply is spoken
        skills.setup(self)
        # Tools last: their setup(app) may add console commands and use every layer above. The loading code
        # is let go once done (tools/loading.py).
        from mimi.tools.loading import boot

        boot(self.registry, tools_dir)

    def part(self, name):
        """The optional part `name` (cron, watchers, heartbeat, mqtt, mcp_client), made and started at the first
        call (parts.py); mqtt stays None while no broker is set."""
        made = getattr(self, name)
        if made is None:
            with heap.scope("part"):  # a part is made a few times a boot at most: parts.py is not kept
                from mimi import parts

                made = parts.made(self, name)
        return made

    def add_channel(self, channel):
        """A channel (channels/__init__.py Channel) the bus's messages of its name go to; returned."""
        self.channels[channel.name] = channel
        return channel

    def add_service(self, service):
        """A network service, run with the others (start_late runs one added after they started); returned."""
        if service not in self.services:
            self.services.append(service)
        return service

    def rules(self):
        """The watchers' rule engine (watch/rules.py), or None while no rule exists."""
        return self.watchers.rules if self.watchers is not None else None

    async def deliver(self, message):
        """A user's message from a channel: a rule's standing /command runs at once (watch/rules.py), before any
        turn of the agent; anything else waits in the inbound queue."""
        rules = self.rules()
        if rules is None or not await rules.take(message):
            await self.bus.inbound.put(message)

    def _small_board_on(self):
        """Small-board mode chosen by config_set after the boot: its TLS lock made and the names interned now (at
        boot both wait for its end: see __init__)."""
        if self.booted:
            _prepare_gate()
            if not self.names_interned:
                _intern_names(self)

    def start_late(self, service):
        """Run a network service made after boot began, once: with the others, or at once when they already
        run; in safe mode not at all, and the return says why (None when it runs or will). See parts.py."""
        with heap.scope("part"):
            from mimi import parts

            return parts.start_late(self, service)

    def _onboarding_if_no_wifi(self, ns, key):
        """Make the setup access point (net/onboarding.py) once no WiFi is saved: at boot, or erased later."""
        if ns == "wifi_config" and key == "ssid" and self.onboarding is None and not self.config.get(ns, key):
            from mimi.net.onboarding import Onboarding

            self.onboarding = self.wifi.setup = Onboarding(self)  # the WiFi keeper opens it while nothing to join

    def _heartbeat_if_on(self, ns, key):
        if ns == "agent_config" and key == "heartbeat_s" and self.config.get(ns, key) > 0:
            return self.part("heartbeat")  # made and started
        return None

    def missing(self):
        cfg = self.config
        gaps = []
        if not cfg.is_set("llm_config", "api_key"):
            gaps.append("Anthropic API key (set_api_key <key>)")
        if not cfg.get("wifi_config", "ssid") and not self.wifi.is_up():
            gaps.append("WiFi (wifi_set <ssid> <password>)")
        return gaps

    def start(self, service):
        """Run a service's task once (kept in self.tasks); its loop catches a MemoryError (health/memory_errors.py)."""
        if service not in self.running:
            self.running.append(service)
            self.tasks.append(asyncio.create_task(service.run()))

    async def _start_services(self):
        for service in self.health.startable(self.services):  # safe mode: the gateway only
            self.start(service)
        self.services_started = True  # a service made later (the first watcher) starts at once (start_late)
        await asyncio.sleep(SERVICE_SETTLE_S)  # let services open their ports and say so first
        log("ready: network up, agent listening")

    async def _start_services_when_up(self):
        # The link may come up long after boot: the setup page, wifi_set, backoff retries.
        await self.wifi.up.wait()
        await self._start_services()

    async def main(self):
        log("MimiClaw-Py {} starting; data on {}".format(VERSION, self.flash.root))
        self.tasks.append(asyncio.create_task(self.console.run()))  # works with no WiFi and no keys
        self.tasks.extend(self.health.start_core())  # agent (safe mode: a stand-in) and dispatcher, watched
        self.core_started = True
        for service in self.health.startable([s for s in self.services if getattr(s, "offline", False)]):
            self.start(service)  # what acts without the network (local rules) starts now, not with it
        gaps = self.missing()
        if gaps:
            log("setup needed: " + "; ".join(gaps))
        if await self.wifi.connect():
            await self._start_services()
        else:
            log("no network yet: the console works; configure WiFi with wifi_set")
            self.tasks.append(asyncio.create_task(self._start_services_when_up()))
        seconds = 0
        while True:  # the main loop stays alive: a MemoryError here is told and survived, never a reset
            try:
                self.health.tick()  # feeds the watchdog while the agent and dispatcher are healthy
                seconds += 1
                if seconds % _GC_PERIOD_S == 0:  # a collection now and then, in this loop (a task costs heap)
                    platform.collect()
                if seconds % HEAP_SAMPLE_S == 1:  # the web app's heap sparkline (health/watchdog.py)
                    self.health.sample_heap()
            except MemoryError as exc:
                memory_errors.short("main loop", exc)
            await asyncio.sleep(1)


def run(**options):
    app = App(**options)
    asyncio.run(app.main())



def _boot_parts(app):
    """Boot parts that add their console lines, imported here, not at the top, so no global of this module keeps
    them: the boot's scope lets their packages go (their LET_GO)."""
    from mimi import mcp, voice

    mcp.setup(app)
    voice.setup(app)


def _intern_names(app):
    """Every module's names (qstrs) interned while the heap is whole, not hours later (board_names.py): once; its
    code is let go after (a boot's scope: mimi/__init__.py LET_GO)."""
    with heap.scope("boot"):
        from mimi import board_names

        app.names_interned = True
        done = board_names.intern_all()
    if done:
        log("board: the names of {} modules interned".format(done))


def _prepare_gate():
    """Small-board mode chosen (at boot or by config_set): its one TLS session's lock made now (net/tls_gate.py),
    not under memory pressure at the first session."""
    from mimi.net.tls_gate import gate

    gate.prepare()
