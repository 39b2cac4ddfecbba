"""The board on a serial port, and the venv's tools that talk to it (mpremote, esptool)."""
import os
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")
LIST_PORTS = ".venv/bin/mpremote connect list"  # what to run to see the serial ports


def shown(path):
    """A path as the user would type it: relative to the repository when inside it."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def tool(env_var, name):
    """A tool's command: $ENV_VAR (split as a shell would), else the venv's, else PATH's."""
    given = os.environ.get(env_var, "").strip()
    if given:
        return shlex.split(given)
    venv = os.path.join(VENV_BIN, name)
    if os.path.exists(venv):
        return [venv]
    found = shutil.which(name)
    if not found:
        sys.exit("{} not found: run `make venv` (or set {} to its command)".format(name, env_var))
    return [found]


def printable(cmd):
    """The command as the user could paste it into a shell; chained mpremote steps one a line."""
    text = " ".join(shlex.quote(shown(part) if os.path.isabs(part) else part) for part in cmd)
    return text.replace(" + ", " \\\n    + ")


def run(cmd, capture=False):
    """Print the command, then run it from the repository root; CompletedProcess."""
    print("$ " + printable(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, text=True, capture_output=capture)


def require_port(who, port, usage):
    """Exit with a clear message unless `port` names a serial port that exists."""
    if not port:
        sys.exit("{}: no PORT given: {} (the board's serial port, e.g. /dev/ttyACM0; "
                 "`{}` lists them)".format(who, usage, LIST_PORTS))
    if port.startswith("/dev/") and not os.path.exists(port):
        sys.exit("{}: no board on {}: the port does not exist (is the board plugged in with a "
                 "data cable? `{}` lists the serial ports)".format(who, port, LIST_PORTS))


def last_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no message"
