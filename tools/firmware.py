#!/usr/bin/env python3
"""`make firmware MICROPY_DIR=...`: MicroPython for the ESP32-S3 with MimiClaw frozen in.

Builds the board definition boards/MIMICLAW_S3 (ESP32_GENERIC_S3 with our partitions.csv, OTA
rollback on, 16 MB flash; variant SPIRAM_OCT for N16R8 modules) out of a MicroPython checkout:

    make -C $MICROPY_DIR/ports/esp32 BOARD_DIR=boards/MIMICLAW_S3 BOARD_VARIANT=SPIRAM_OCT \\
         FROZEN_MANIFEST=boards/MIMICLAW_S3/manifest.py

It needs ESP-IDF installed and exported in the shell (`. $IDF_PATH/export.sh`: idf.py on PATH,
IDF_PATH set) and says what is missing when it is not. The results are copied to build/firmware/:
firmware.bin (bootloader + partition table + app, for `make flash`) and micropython.bin (the app
alone, what OTA streams into the next slot; its SHA-256 is printed). Every command is printed.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARD_DIR = os.path.join(ROOT, "boards", "MIMICLAW_S3")
VARIANT = "SPIRAM_OCT"
OUTPUTS = ("firmware.bin", "micropython.bin")
MICROPYTHON_URL = "https://github.com/micropython/micropython"


def shown(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def run(cmd, env=None):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env).returncode


def microdot_dir():
    import microdot  # the venv's copy: the version the host tests and `make bundle` use

    return os.path.dirname(microdot.__file__)


def problems(micropython_dir, environ):
    """Every reason the build cannot start here, as sentences saying what to do."""
    found = []
    if not micropython_dir:
        found.append("MICROPY_DIR is not set: clone MicroPython ({}, v1.24 or later) and run "
                     "`make firmware MICROPY_DIR=/path/to/micropython`".format(MICROPYTHON_URL))
    elif not os.path.isfile(os.path.join(micropython_dir, "ports", "esp32", "Makefile")):
        found.append("MICROPY_DIR={} is not a MicroPython checkout (no ports/esp32/Makefile)"
                     .format(micropython_dir))
    idf_path = environ.get("IDF_PATH")
    if not idf_path:
        found.append("ESP-IDF: IDF_PATH is not set: install ESP-IDF (the version named in "
                     "ports/esp32/README.md of your MicroPython) and run `. $IDF_PATH/export.sh` "
                     "in this shell")
    elif not os.path.isdir(idf_path):
        found.append("ESP-IDF: IDF_PATH={} does not exist".format(idf_path))
    if not shutil.which("idf.py", path=environ.get("PATH")):
        found.append("ESP-IDF: idf.py is not on PATH: run `. $IDF_PATH/export.sh` in this shell")
    return found


def build(micropython_dir, out, environ):
    port_dir = os.path.join(micropython_dir, "ports", "esp32")
    env = dict(environ, MIMICLAW_MICRODOT=microdot_dir())
    print("MIMICLAW_MICRODOT={}".format(env["MIMICLAW_MICRODOT"]))
    if not os.path.exists(os.path.join(micropython_dir, "mpy-cross", "build", "mpy-cross")):
        if run(["make", "-C", os.path.join(micropython_dir, "mpy-cross")], env):
            sys.exit("firmware: building MicroPython's mpy-cross failed (see above)")
    board = ["BOARD_DIR=" + BOARD_DIR, "BOARD_VARIANT=" + VARIANT]
    lib = os.path.join(micropython_dir, "lib", "micropython-lib")
    if not os.path.isdir(lib) or not os.listdir(lib):
        if run(["make", "-C", port_dir] + board + ["submodules"], env):
            sys.exit("firmware: fetching MicroPython's submodules failed (see above)")
    manifest = "FROZEN_MANIFEST=" + os.path.join(BOARD_DIR, "manifest.py")
    if run(["make", "-C", port_dir] + board + [manifest], env):
        sys.exit("firmware: the MicroPython build failed (see above)")
    built = os.path.join(port_dir, "build-{}-{}".format(os.path.basename(BOARD_DIR), VARIANT))
    os.makedirs(out, exist_ok=True)
    for name in OUTPUTS:
        shutil.copyfile(os.path.join(built, name), os.path.join(out, name))
    with open(os.path.join(out, "micropython.bin"), "rb") as f:
        app = f.read()
    print("firmware: wrote {} (flash it: make flash PORT=... FIRMWARE={})".format(
        shown(os.path.join(out, "firmware.bin")), shown(os.path.join(out, "firmware.bin"))))
    print("firmware: app image {} ({} bytes, sha256 {}) is what OTA installs".format(
        shown(os.path.join(out, "micropython.bin")), len(app), hashlib.sha256(app).hexdigest()))


def main(argv=None, environ=None):
    environ = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--micropython", default=environ.get("MICROPY_DIR", ""),
                        help="MicroPython checkout (default: $MICROPY_DIR)")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "firmware"))
    args = parser.parse_args(argv)
    micropython_dir = os.path.abspath(args.micropython) if args.micropython else ""
    missing = problems(micropython_dir, environ)
    if missing:
        sys.exit("firmware: cannot build here:\n" + "\n".join("  - " + p for p in missing))
    build(micropython_dir, os.path.abspath(args.out), environ)


if __name__ == "__main__":
    main()
