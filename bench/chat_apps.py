# Figures of the chat apps (issue 45): the idle heap with each one on, and the peak of a turn through it, in the ROMFS
# form, everything over TLS (a real Synapse, the fake Discord and Telegram, the fake Anthropic API, one test CA);
# with no chat app for comparison, and with Telegram, Matrix and Discord at once. For each MicroPython binary
# (bench/setup.py binaries(): micropython32 counts TLS in the GC heap).
import json
import os
import shutil
import subprocess
import threading
import time

from bench.drivers.common import HOST_NAMES_MARK, RESULT_MARK
from bench.drivers_run import pools_bytes
from bench.setup import API_KEY, ROMFS_IMAGE, ROOT, TG_TOKEN, WORK, binaries, binary_name, free_port, fresh_dir, \
    micropython
from host_sim.fake_anthropic import FakeAnthropic, text
from host_sim.fake_discord import DEFAULT_TOKEN, FakeDiscord
from host_sim.fake_telegram import FakeTelegram
from tests.certs import make_test_ca, server_context
from tests.synapse import Homeserver, available, call, wait_for

HEAP = "1024K"  # roomy, as peak_heap_per_turn: what a turn uses, not what a tight heap forces
# "all": Telegram, Matrix and Discord at once, a turn by Matrix; "matrix_small": Matrix in small-board mode (one TLS
# session at a time: the sync gives way, the reply comes whole), as a board without PSRAM runs it
SCENARIOS = ("none", "matrix", "discord", "all", "matrix_small")
DISCORD_USER = "200000000000000042"
_REPLY = "A reply of a few sentences, streamed in pieces as a model writes it. " * 12


class _Driver:
    """The driver as a subprocess whose lines are read as they come (the users write when it says so)."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace")
        self.lines = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def said(self, mark, timeout=120):
        try:
            return wait_for(lambda: mark in self.lines or self.proc.poll() is not None, timeout, what=mark) \
                and mark in self.lines or _fail(self, mark)
        except AssertionError:
            _fail(self, mark)

    def result(self, timeout=180):
        self.proc.wait(timeout)
        for line in reversed(self.lines):
            if line.startswith(RESULT_MARK):
                return json.loads(line[len(RESULT_MARK):])
        raise RuntimeError("chat_app_turn gave no result:\n" + "\n".join(self.lines[-30:]))


def _fail(driver, mark):
    raise RuntimeError("the driver never said {}:\n{}".format(mark, "\n".join(driver.lines[-25:])))


class _Matrix:
    """Synapse, the board's account (logged in here: its token goes in the settings) and alice, its owner."""

    def __init__(self, paths):
        self.hs = Homeserver(fresh_dir("bench-synapse"))
        self.hs.start()
        self.hs.register("board", "board-pass")
        self.hs.register("alice", "alice-pass")
        self.alice = self.hs.login("alice", "alice-pass")
        self.room = None

    def settings(self):
        login = call(self.hs.plain_url, "POST", "/_matrix/client/v3/login",
                     {"type": "m.login.password", "identifier": {"type": "m.id.user", "user": "board"},
                      "password": "board-pass"})
        return {"mx_config": {"homeserver": self.hs.url, "user": login["user_id"], "token": login["access_token"],
                              "allow": self.alice.user_id + "=owner"}}

    def write(self, number):
        if self.room is None:
            self.room = self.alice.create_room(invite=["@board:localhost"], is_direct=True)
            wait_for(lambda: len(self.alice.joined_members(self.room)) == 2, 60, what="the board joining")
        self.alice.send_text(self.room, "message {}".format(number))

    def stop(self):
        self.hs.stop()


def _host_names(lines):
    """The heap of the laptop side's qstr pools (common.mark_host's line after HOST_NAMES_MARK), else 0."""
    for i, line in enumerate(lines[:-1]):
        if line == HOST_NAMES_MARK and lines[i + 1].startswith("qstr pool:"):
            return pools_bytes(lines[i + 1])
    return 0


def _run(binary, scenario, fake, matrix, discord, telegram, paths, log):
    flash = fresh_dir("chat-apps-{}-{}".format(binary_name(binary), scenario))
    certs = os.path.join(flash, "data", "certs")
    os.makedirs(certs, exist_ok=True)
    shutil.copy(paths["ca.der"], os.path.join(certs, "test_ca.der"))
    shutil.copy(matrix.hs.ca_der, os.path.join(certs, "synapse_ca.der"))  # the homeserver makes its own CA
    settings = {"system": {"small_board": "on" if scenario == "matrix_small" else "off"}}
    if scenario in ("matrix", "all", "matrix_small"):
        settings.update(matrix.settings())
        matrix.room = None
    if scenario in ("discord", "all"):
        settings["dc_config"] = {"api_base": discord.api_base, "token": DEFAULT_TOKEN,
                                 "allow": DISCORD_USER + "=owner"}
    if scenario == "all":
        settings["tg_config"] = {"api_base": telegram.url, "bot_token": TG_TOKEN}
    channel = "matrix" if scenario in ("all", "matrix_small") else scenario
    fake.reset()
    fake.brain = lambda body, chunk, delay: text(_REPLY, chunk=48, delay=0.02)
    settings_file = os.path.join(flash, "settings.json")  # not an argument: see the driver's header
    with open(settings_file, "w") as f:
        json.dump(settings, f)
    cmd = micropython(HEAP, binary) + ["bench/drivers/chat_app_turn.py", "romfs:" + ROMFS_IMAGE, flash, fake.url,
                                       API_KEY, free_port(), channel, settings_file]
    driver = _Driver([str(part) for part in cmd])
    try:
        if channel != "none":
            for number, mark in ((1, "BENCH_WARM"), (2, "BENCH_MEASURE")):
                driver.said(mark)
                if channel == "matrix":
                    matrix.write(number)
                else:
                    discord.user_message(DISCORD_USER, "message {}".format(number))
        result = driver.result()
    finally:
        if driver.proc.poll() is None:
            driver.proc.kill()
        fake.brain = None
    host = result["host"] - _host_names(driver.lines)  # the qstr pools count as the firmware's (bench/heap.py)
    kb = {"idle_kb": round((result["idle"] + result["image"] - host) / 1024, 1),
          "turn_peak_kb": round((result["peak"] + result["image"] - host) / 1024, 1),
          "above_idle_kb": round(result["above_idle"] / 1024, 1), "ok": result["ok"], "heap": HEAP}
    log("  chat apps, {} ROMFS, {}: idle {} KB for the firmware, a turn's peak {} KB (+{} KB){}".format(
        binary_name(binary), scenario, kb["idle_kb"], kb["turn_peak_kb"], kb["above_idle_kb"],
        "" if result["ok"] else ", THE TURN FAILED"))
    return kb


def measure(fake_plain, log):
    """idle_chat_apps and turn_peak_chat_apps: {binary: {scenario: figures}}."""
    if not available():
        log("  chat apps: skipped (matrix-synapse is not installed)")
        return {}, {}
    paths = make_test_ca(fresh_dir("chat-apps-ca"))
    fake = FakeAnthropic(api_key=API_KEY, ssl_context=server_context(paths))
    discord = FakeDiscord(ssl_context=server_context(paths), heartbeat_interval_ms=41250)
    telegram = FakeTelegram(token=TG_TOKEN, ssl_context=server_context(paths))
    for server in (fake, discord, telegram):
        server.start()
    matrix = _Matrix(paths)
    idle, peak = {}, {}
    try:
        for binary in binaries():
            name = binary_name(binary)
            idle[name], peak[name] = {}, {}
            for scenario in SCENARIOS:
                try:
                    figures = _run(binary, scenario, fake, matrix, discord, telegram, paths, log)
                except (AssertionError, RuntimeError, subprocess.TimeoutExpired) as exc:
                    log("  chat apps, {}, {}: failed: {}".format(name, scenario, str(exc)[-400:]))
                    figures = {"why": str(exc)[-200:]}
                idle[name][scenario] = {k: figures.get(k) for k in ("idle_kb", "heap", "why") if k in figures}
                peak[name][scenario] = {k: figures.get(k) for k in ("turn_peak_kb", "above_idle_kb", "ok", "why")
                                        if k in figures}
                time.sleep(0.5)
    finally:
        matrix.stop()
        for server in (fake, discord, telegram):
            server.stop()
        shutil.rmtree(os.path.join(WORK, "chat-apps-ca"), ignore_errors=True)
    return idle, peak


def rows(name, figure):
    """(binary and scenario, value) pairs for the results table."""
    out = []
    for binary in sorted(figure):
        for scenario in SCENARIOS:
            f = figure[binary].get(scenario) or {}
            if name == "idle_chat_apps":
                value = "{} KB for the firmware".format(f["idle_kb"]) if f.get("idle_kb") else f.get("why", "n/a")
            else:
                value = "{} KB for the firmware, +{} KB above idle".format(f["turn_peak_kb"], f["above_idle_kb"]) \
                    if f.get("turn_peak_kb") else f.get("why", "n/a")
            shown = {"none": "no chat app (a console turn)", "all": "Telegram, Matrix and Discord at once",
                     "matrix_small": "matrix, small-board mode"}
            out.append(("{} ROMFS, {}".format(binary, shown.get(scenario, scenario)), value))
    return out
