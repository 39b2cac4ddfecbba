#!/usr/bin/env python3
"""`make romfs` / `make deploy-romfs PORT=...`: the firmware as a ROMFS image, run in place from flash.

build: the bundle (tools/bundle.py: every module compiled with mpy-cross -march=xtensawin,
microdot, the CA certificates, the web pages) without its root files goes into a folder, and
`mpremote romfs --no-mpy build` makes build/romfs.img of it (the modules are already compiled),
with build/romfs.img.sha256 beside it (what `ota_bundle <url>/romfs.img` checks). Image layout:
    lib/mimi/**.mpy, lib/microdot/*.mpy   /rom/lib on the board: before /lib on sys.path
    certs/*.der, www/...                  /rom/certs, /rom/www
The image must fit the `romfs` partition of every partition table (checked, with the room left).
It prints the esptool command that writes it at the romfs partition of --partitions (the board in
its ROM bootloader, as `make flash`; --port fills in the port), for a board without MicroPython yet.

deploy: `mpremote romfs deploy build/romfs.img` into the board's romfs partition, then main.py,
boot.py and romfs_boot.py (source files MicroPython runs from the LittleFS root) with `fs cp`, then
`reset`. /data is never touched. $MPREMOTE replaces the venv's mpremote (the tests use a fake one).
"""
import argparse
import hashlib
import os
import shutil
import sys

import serial_board

ROOT = serial_board.ROOT
TOOLS = os.path.join(ROOT, "tools")
BUILD = os.path.join(ROOT, "build")
IMAGE = os.path.join(BUILD, "romfs.img")
TABLES = ("partitions.csv", "partitions-8MiB.csv")
PARTITION = "romfs"
IMAGE_DIRS = ("lib", "certs", "www")  # what goes into the image; the root files stay on LittleFS
ROOT_FILES = ("main.py", "boot.py", "romfs_boot.py")  # run by name from / at boot: never in the image
ROMFS_HEADER = b"\xd2\xcd\x31"


def partition(table):
    """The romfs partition of a table (a path, relative to the repository or absolute)."""
    sys.path.insert(0, TOOLS)
    import partition_table

    return partition_table.find(partition_table.read(os.path.join(ROOT, table)), PARTITION)


def stage(src, firmware):
    """The bundle's image part in src/ (a fresh bundle is built next to it)."""
    sys.path.insert(0, TOOLS)
    import bundle

    full = src + ".bundle"
    bundle.build(full, firmware or bundle.FIRMWARE, defs_file=False)  # DEFS stays in the image's flash
    if os.path.isdir(src):
        shutil.rmtree(src)
    os.makedirs(src)
    for name in IMAGE_DIRS:
        if os.path.isdir(os.path.join(full, name)):
            shutil.copytree(os.path.join(full, name), os.path.join(src, name))
    return full


def build(out=IMAGE, firmware=None):
    src = os.path.splitext(out)[0] + "-src"  # build/romfs-src (+ .bundle): one per image, side by side
    full = stage(src, firmware)
    mpremote = serial_board.tool("MPREMOTE_BUILD", "mpremote")
    result = serial_board.run(mpremote + ["romfs", "--no-mpy", "--output", out, "build", src], capture=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        sys.exit("romfs: mpremote romfs build failed (see above)")
    with open(out, "rb") as f:
        data = f.read()
    if not data.startswith(ROMFS_HEADER):
        sys.exit("romfs: {} is not a ROMFS image".format(serial_board.shown(out)))
    digest = hashlib.sha256(data).hexdigest()
    with open(out + ".sha256", "w") as f:
        f.write(digest + "\n")
    print("romfs: wrote {} ({} bytes, SHA-256 {})".format(serial_board.shown(out), len(data), digest))
    for table in TABLES:
        size = partition(table).size
        if len(data) > size:
            sys.exit("romfs: the image ({} bytes) does not fit the {} partition of {} ({} bytes)".format(
                len(data), PARTITION, table, size))
        print("romfs: fits {} of {}: {} bytes ({:.0f} %), {} left".format(
            PARTITION, table, size, 100.0 * len(data) / size, size - len(data)))
    shutil.rmtree(src)
    return full, data


def print_flash_command(table, port, out):
    print("Flash it with esptool (the board in its bootloader; `make deploy-romfs` does it through "
          "MicroPython):")
    print("  esptool --chip esp32s3 --port {} write-flash {:#x} {}".format(
        port, partition(table).offset, serial_board.shown(out)))


def deploy(port, out, do_build, firmware=None):
    serial_board.require_port("deploy-romfs", port, "make deploy-romfs PORT=/dev/ttyACM0")
    if do_build:
        full, _data = build(out, firmware)
    else:
        full = os.path.splitext(out)[0] + "-src.bundle"
        if not os.path.exists(out) or not os.path.isdir(full):
            sys.exit("deploy-romfs: no image in {}; run `make romfs` first".format(serial_board.shown(out)))
    mpremote = serial_board.tool("MPREMOTE", "mpremote")
    steps = ["connect", port, "romfs", "deploy", serial_board.shown(out)]
    for name in ROOT_FILES:
        local = os.path.join(full, name)
        if os.path.exists(local):
            steps += ["+", "fs", "cp", "-f", serial_board.shown(local), ":" + name]
    result = serial_board.run(mpremote + steps + ["+", "reset"])
    if result.returncode != 0:
        sys.exit("deploy-romfs: mpremote stopped part-way (see above); run `make deploy-romfs` again")
    print("deploy-romfs: done; the board restarts running the image from /rom (`status` says so)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("build", "deploy"))
    parser.add_argument("--out", default=IMAGE, help="the image (default build/romfs.img)")
    parser.add_argument("--port", default="")
    parser.add_argument("--no-build", action="store_true", help="deploy the image already built")
    parser.add_argument("--firmware", default=None, help="source tree (default firmware/)")
    parser.add_argument("--partitions", default="partitions.csv",
                        help="the table whose romfs offset the printed esptool command uses")
    args = parser.parse_args(argv)
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    firmware = os.path.abspath(args.firmware) if args.firmware else None
    if args.command == "build":
        build(out, firmware)
        print_flash_command(args.partitions, args.port or "PORT", out)
    else:
        deploy(args.port, out, not args.no_build, firmware)


if __name__ == "__main__":
    main()
