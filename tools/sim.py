#!/usr/bin/env python3
"""`make sim`: the firmware under the MicroPython unix port, talking to the fake Claude
(or to the real API when ANTHROPIC_API_KEY is set), with the web chat on localhost:18789 and
Telegram through the real Bot API when TELEGRAM_BOT_TOKEN is set. Type `help` at the prompt.
Ctrl-C, SIGTERM and a closed terminal (SIGHUP) all stop the fake API and the firmware."""
import argparse
import os
import select
import signal
import socket
import sys
import threading

import sim_console

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
FAKE_KEY = "sk-ant-fake-demo-key-0000"
DEMO_MODEL = "offline-demo"  # what status and usage call the demo (firmware/mimi/safety/prices.py DEMO_MODEL)
DEMO_GUIDE = (
    "\n  This is the OFFLINE DEMO: replies come from a stand-in brain, not from Claude.\n"
    "  Try:  chat hello  |  chat what time is it?  |  chat remember I like green tea  |  help\n"
    "  Web chat: http://localhost:{port}/  (ws_token prints the link with its token)\n"
    "  Real Claude: press Ctrl-C, then run  ANTHROPIC_API_KEY=sk-ant-... make sim\n"
    "  Up/Down recall earlier lines, Tab completes a command; Ctrl-C quits.\n\n"
)
REAL_GUIDE = (
    "\n  Claude: the real Anthropic API (key from ANTHROPIC_API_KEY). Try: chat hello  |  help\n"
    "  Web chat: http://localhost:{port}/  (ws_token prints the link with its token)\n"
    "  Up/Down recall earlier lines, Tab completes a command; Ctrl-C quits.\n\n"
)
TELEGRAM_GUIDE = "  Telegram: write to your bot; the console then shows the tg_allow command that admits you.\n\n"
PORT_TAKEN = "sim: port {} is in use (another make sim?); choose another: make sim WS_PORT={}"
FAKE_PORT_TAKEN = "sim: port {} for the fake Anthropic API is in use; leave out --fake-port to take any free one"


class Stop(Exception):
    """SIGHUP or SIGTERM: end the simulation as Ctrl-C does."""


def _on_signal(signum, frame):
    raise Stop()


def _hang_up_with_parent():
    """SIGHUP to this process when its parent dies (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(sim_console.PR_SET_PDEATHSIG, signal.SIGHUP)
    except (ImportError, OSError, AttributeError):
        pass


def _watch_terminal():
    """SIGHUP to this process once its terminal hangs up: the kernel signals only the session's leader
    (make, which waits for its recipe), so a closed terminal would otherwise leave everything running."""
    if not sys.stdin.isatty():
        return

    def watch():
        hung_up = select.poll()
        hung_up.register(sys.stdin.fileno(), 0)  # no input asked for: only POLLHUP / POLLERR come back
        while True:
            for _, events in hung_up.poll():
                if events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    os.kill(os.getpid(), signal.SIGHUP)
                    return

    threading.Thread(target=watch, daemon=True).start()


def port_free(port):
    """Whether the gateway could listen on `port` (as it does: all interfaces, SO_REUSEADDR)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _free_port_after(port):
    for candidate in range(port + 1, min(port + 100, 65536)):
        if port_free(candidate):
            return candidate
    return port + 1


def _start_fake(port):
    """The fake Anthropic API in a thread of this process: it cannot outlive the simulation."""
    from host_sim import demo_brain
    from host_sim.fake_anthropic import FakeAnthropic

    fake = FakeAnthropic(api_key=FAKE_KEY, port=port, delay=0.02, brain=demo_brain.reply)
    try:
        fake.start()
    except OSError:
        sys.exit(FAKE_PORT_TAKEN.format(port))
    return fake


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flash", default="flash", help="folder standing in for the board's flash")
    parser.add_argument("--ws-port", type=int, default=18789)
    parser.add_argument("--fake-port", type=int, default=0,
                        help="port of the fake Anthropic API (default: any free port)")
    parser.add_argument("--runtime", default=os.path.join(ROOT, ".venv", "bin", "micropython"),
                        help="micropython (default) or python3")
    args = parser.parse_args()
    if not port_free(args.ws_port):
        print(PORT_TAKEN.format(args.ws_port, _free_port_after(args.ws_port)), file=sys.stderr)
        return 1
    signal.signal(signal.SIGHUP, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    parent = os.getppid()
    _hang_up_with_parent()  # make, or the shell, ends with its terminal: so does this
    if os.getppid() != parent:  # it had ended already
        return 0
    _watch_terminal()
    env = dict(os.environ)
    fake = None
    cmd = [args.runtime, "host_sim/run.py", "--flash", args.flash, "--ws-port", str(args.ws_port)]
    try:
        if env.get("ANTHROPIC_API_KEY"):
            print("sim: using the real Anthropic API (ANTHROPIC_API_KEY is set)")
            cmd += ["--api-key-env", "ANTHROPIC_API_KEY"]
        else:
            fake = _start_fake(args.fake_port)
            env["MIMI_FAKE_KEY"] = FAKE_KEY
            cmd += ["--anthropic-api", fake.url, "--api-key-env", "MIMI_FAKE_KEY", "--model", DEMO_MODEL]
        if env.get("TELEGRAM_BOT_TOKEN"):
            print("sim: Telegram through the real Bot API (TELEGRAM_BOT_TOKEN is set); admit yourself with tg_allow")
            cmd += ["--bot-token-env", "TELEGRAM_BOT_TOKEN"]
        if env.get("TELEGRAM_API"):
            cmd += ["--telegram-api", env["TELEGRAM_API"]]
        guide = (DEMO_GUIDE if fake else REAL_GUIDE).format(port=args.ws_port)
        if env.get("TELEGRAM_BOT_TOKEN"):
            guide += TELEGRAM_GUIDE
        return sim_console.run(cmd, ROOT, env, guide, Stop)
    except (KeyboardInterrupt, Stop):
        return 0
    finally:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the clean-up below is not cut short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if fake:
            fake.stop()


if __name__ == "__main__":
    sys.exit(main())
