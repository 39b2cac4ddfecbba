#!/usr/bin/env python3
"""`make sim`: the firmware under the MicroPython unix port, talking to the fake Claude
(or to the real API when ANTHROPIC_API_KEY is set), with the web chat on localhost:18789 and
Telegram through the real Bot API when TELEGRAM_BOT_TOKEN is set. Type `help` at the prompt."""
import argparse
import os
import subprocess
import sys
import time

import sim_console

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKE_KEY = "sk-ant-fake-demo-key-0000"
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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flash", default="flash", help="folder standing in for the board's flash")
    parser.add_argument("--ws-port", default="18789")
    parser.add_argument("--fake-port", default="8089", help="port of the fake Anthropic API")
    parser.add_argument("--runtime", default=os.path.join(ROOT, ".venv", "bin", "micropython"),
                        help="micropython (default) or python3")
    args = parser.parse_args()
    env = dict(os.environ)
    fake = None
    cmd = [args.runtime, "host_sim/run.py", "--flash", args.flash, "--ws-port", args.ws_port]
    if env.get("ANTHROPIC_API_KEY"):
        print("sim: using the real Anthropic API (ANTHROPIC_API_KEY is set)")
        cmd += ["--api-key-env", "ANTHROPIC_API_KEY"]
    else:
        fake = subprocess.Popen(
            [sys.executable, "-m", "host_sim.fake_anthropic", "--port", args.fake_port, "--api-key", FAKE_KEY,
             "--demo"],
            cwd=ROOT,
        )
        time.sleep(1.0)
        if fake.poll() is not None:
            sys.exit("sim: the fake Anthropic API did not start (is port {} free?)".format(args.fake_port))
        env["MIMI_FAKE_KEY"] = FAKE_KEY
        cmd += ["--anthropic-api", "http://127.0.0.1:" + args.fake_port, "--api-key-env", "MIMI_FAKE_KEY"]
    if env.get("TELEGRAM_BOT_TOKEN"):
        print("sim: Telegram through the real Bot API (TELEGRAM_BOT_TOKEN is set); admit yourself with tg_allow")
        cmd += ["--bot-token-env", "TELEGRAM_BOT_TOKEN"]
    if env.get("TELEGRAM_API"):
        cmd += ["--telegram-api", env["TELEGRAM_API"]]
    guide = (DEMO_GUIDE if fake else REAL_GUIDE).format(port=args.ws_port)
    if env.get("TELEGRAM_BOT_TOKEN"):
        guide += TELEGRAM_GUIDE
    try:
        return sim_console.run(cmd, ROOT, env, guide)
    except KeyboardInterrupt:
        return 0
    finally:
        if fake:
            fake.terminate()
            fake.wait(5)


if __name__ == "__main__":
    sys.exit(main())
