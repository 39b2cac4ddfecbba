#!/usr/bin/env python3
"""The Debian packages `make test` drives besides .venv: each is found, installed (as root, with
apt-get), or named in one line that says exactly what to install. Standard library only: it runs
before .venv exists.

    python3 tools/system_deps.py [--root DIR]    (DIR: where Debian's files are looked for, default /)
"""
import argparse
import os
import shutil
import subprocess
import sys

# One line per need: (command, where Debian's package puts it, Debian package, env var naming
# another copy, what needs it). A command is found on PATH, at its Debian path, or at the env var's.
DEPS = [
    ("chromium", "/usr/bin/chromium", "chromium", "MIMI_CHROMIUM", "the web chat's browser tests"),
    ("mosquitto", "/usr/sbin/mosquitto", "mosquitto", None, "the MQTT tests"),
]
APT_ENV = {"DEBIAN_FRONTEND": "noninteractive"}


def found(dep, root="/"):
    command, path, _, env_var, _ = dep
    if env_var and os.environ.get(env_var):
        return os.path.exists(os.environ[env_var])
    return bool(shutil.which(command)) or os.path.exists(os.path.join(root, path.lstrip("/")))


def missing(root="/"):
    return [dep for dep in DEPS if not found(dep, root)]


def what_to_install(deps):
    """The one line a user reads when the tool cannot install by itself."""
    packages = " ".join(dep[2] for dep in deps)
    needs = ", ".join(dep[4] for dep in deps)
    return ("make test needs the Debian package(s) {} ({}): run `sudo apt-get install -y {}` "
            "and try again".format(packages, needs, packages))


def can_install():
    return hasattr(os, "geteuid") and os.geteuid() == 0 and bool(shutil.which("apt-get"))


def install(deps):
    """apt-get update, then install; True when apt-get said it worked."""
    env = dict(os.environ, **APT_ENV)
    packages = [dep[2] for dep in deps]
    print("system_deps: installing {} with apt-get".format(" ".join(packages)), flush=True)
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq"] + packages):
        if subprocess.call(cmd, env=env, stdout=subprocess.DEVNULL) != 0:
            return False
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default="/", help="where the Debian paths are looked for")
    root = parser.parse_args(argv).root
    lacking = missing(root)
    if not lacking:
        return 0
    if can_install() and install(lacking):
        lacking = missing(root)
        if not lacking:
            return 0
    print(what_to_install(lacking), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
