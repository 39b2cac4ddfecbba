# TLS counted (issue 25): the 10-turn chat and the idle heap with both fakes on https, small-board mode, what
# one TLS session and the CA certificates cost; for the default MicroPython and MIMI_MICROPYTHON's binary.
import http.server
import os
import shutil
import threading

from bench import conversation
from bench.drivers_run import run_driver
from bench.setup import (API_KEY, ROMFS_IMAGE, SOURCE_LIB, TG_TOKEN, WORK, binaries, binary_name, fresh_dir,
                         micropython)
from host_sim.fake_anthropic import FakeAnthropic
from host_sim.fake_telegram import FakeTelegram
from tests.certs import make_test_ca, server_context

BIG_BODY = 64 * 1024  # the local https server's answer: read 512 bytes at a time, as net/http.py reads
COST_ROOM_KB = 256  # the driver's heap beyond the ROMFS image, which the unix port holds in its heap
IDLE_HEAP = "1024K"  # roomy, as peak_heap_per_turn: the figure is what idle holds, not what a tight heap forces
MODES = ("tls", "tls_small_board")


class _Big(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server name)
        body = b"x" * BIG_BODY
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _https_server(paths):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Big)
    server.socket = server_context(paths).wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def session_cost(binary, paths, log):
    """The tls_cost driver's figures (bytes) under one binary, ROMFS form."""
    owner = fresh_dir("tls-owner-certs")
    shutil.copy(paths["ca.der"], os.path.join(owner, "test_ca.der"))
    server = _https_server(paths)
    try:
        cmd = micropython("{}K".format(os.path.getsize(ROMFS_IMAGE) // 1024 + COST_ROOM_KB), binary)
        result = run_driver(cmd, "tls_cost.py", "romfs:" + ROMFS_IMAGE, SOURCE_LIB + "/certs", owner,
                            server.server_address[1])
    finally:
        server.shutdown()
    kb = {name: round(value / 1024, 1) for name, value in result.items() if isinstance(value, int)
          and name not in ("shipped_certificates", "body_bytes")}
    kb["shipped_certificates"] = result.get("shipped_certificates")
    log("    TLS cost, {}: all CA certificates {} KB, one session after the handshake {} KB, while reading {} KB"
        .format(binary_name(binary), kb.get("all_certificates"), kb.get("after_handshake"),
                kb.get("while_reading")))
    return kb


def _tls_flash(paths, small):
    """Prepare a standard flash for the chat over https: the test CA in data/certs, the bot token set (its
    long poll open while the console chats), and small-board mode on or off."""

    def prepare(flash):
        certs = os.path.join(flash, "data", "certs")
        os.makedirs(certs, exist_ok=True)
        shutil.copy(paths["ca.der"], os.path.join(certs, "test_ca.der"))
        return {"tg_config": {"bot_token": TG_TOKEN}, "system": {"small_board": "on" if small else "off"}}

    return prepare


def measure(fake_plain, log):
    """smallest_heap_tls and idle_tls for each MicroPython binary (bench/setup.py binaries())."""
    paths = make_test_ca(fresh_dir("tls-ca"))
    fake = FakeAnthropic(api_key=API_KEY, ssl_context=server_context(paths))
    tg = FakeTelegram(token=TG_TOKEN, ssl_context=server_context(paths))
    fake.start()
    tg.start()
    heap, idle, cost = {}, {}, {}
    try:
        for binary in binaries():
            name = binary_name(binary)
            cost[name] = session_cost(binary, paths, log)
            heap[name], idle[name] = {}, {}
            for mode in MODES:
                extra = ("--telegram-api", tg.url)
                prepare = _tls_flash(paths, mode == "tls_small_board")
                log("  smallest heap over TLS, {} ({})".format(name, mode))
                heap[name][mode] = conversation.smallest_heap(fake, "romfs", log, binary=binary, extra=extra,
                                                              prepare=prepare, low_kb=512)
                idle[name][mode] = conversation.idle_after_chat(fake, "romfs", IDLE_HEAP, binary, extra, prepare)
                log("    idle after the chat: {} KB for the firmware".format(idle[name][mode].get("kb_firmware")))
    finally:
        fake.stop()
        tg.stop()
        shutil.rmtree(os.path.join(WORK, "tls-ca"), ignore_errors=True)
    return heap, idle, cost


def rows(name, figure):
    """(binary and mode, value) pairs for the results table."""
    out = []
    for binary in sorted(figure):
        if name == "tls_cost":
            f = figure[binary]
            out.append((binary, "CA certificates: all {} {} KB (kept for ever on a roomy board), small board: "
                        "Telegram's {} KB, Anthropic's {} KB; one session: {} KB after the handshake, {} KB while "
                        "reading, {} KB after close".format(
                            f.get("shipped_certificates"), f.get("all_certificates"), f.get("small_board_telegram"),
                            f.get("small_board_anthropic"), f.get("after_handshake"), f.get("while_reading"),
                            f.get("after_close"))))
            continue
        for mode in MODES:
            f = figure[binary].get(mode) or {}
            if name == "smallest_heap_tls":
                value = "{} KB heapsize, {} KB for the firmware".format(f.get("kb"), f.get("kb_firmware")) \
                    if f.get("kb") else f.get("note", "n/a")
            else:
                value = "{} KB for the firmware ({} KB with the laptop side)".format(
                    f.get("kb_firmware"), f.get("kb_with_host")) if f.get("kb_firmware") else f.get("why", "n/a")
            out.append(("{} ROMFS, {}".format(binary, mode.replace("_", " ")), value))
    return out
