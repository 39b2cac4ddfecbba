#!/usr/bin/env python3
"""`make flash PORT=... FIRMWARE=...` and `make erase PORT=...`: esptool v5 on the ESP32-S3.

flash writes a MicroPython image and keeps the board's settings and files:
  - a full image (MicroPython's firmware.bin: bootloader at 0x0, partition table at 0x8000, app at
    the first app partition; what micropython.org publishes and `make firmware` builds) is written
    as two pieces, bootloader + table at 0x0 and the app at its slot. Writing the whole file at 0x0
    would also write the 0xff padding between table and app over nvs (the settings) and otadata;
  - an app image alone (micropython.bin) is written at the first app slot of partitions.csv.
  otadata is erased (when the table has one) so the bootloader boots the app just written, not an
  older one an OTA update left in the other slot. nvs, phy_init and vfs (every file, /data with
  the owner's memory and sessions) are not touched.
erase wipes the whole flash: firmware, settings and files.
Every command is printed; $ESPTOOL replaces the venv's esptool (the tests use a fake one).
"""
import argparse
import collections
import os
import re
import struct
import sys

import partition_table  # tools/, beside this file
import serial_board

CHIP = "esp32s3"
CHIP_IDS = {0: "esp32", 2: "esp32s2", 5: "esp32c3", 9: "esp32s3", 12: "esp32c2", 13: "esp32c6",
            16: "esp32h2", 18: "esp32p4"}  # esp_image_header_t.chip_id
S3_CHIP_ID = 9
IMAGE_MAGIC = 0xE9
CHIP_ID_OFFSET = 12  # after magic, segments, flash mode, size/freq, entry (4), wp pin, drive (3)
TABLE_ENTRY = struct.Struct("<2sBBII16sI")  # magic, type, subtype, offset, size, label, flags
TABLE_MAGIC = b"\xaa\x50"
TABLE_MAX_SIZE = 0xC00  # ESP-IDF's limit for the table, MD5 entry included
APP_TYPE = 0
OTADATA = (1, 0)  # data, ota
ESPTOOL_MAJOR = 5  # write-flash / erase-flash spellings
WORK_DIR = os.path.join(serial_board.ROOT, "build", "flash")

Piece = collections.namedtuple("Piece", "offset path what")


def esptool():
    return serial_board.tool("ESPTOOL", "esptool")


def on_board(port):
    return esptool() + ["--chip", CHIP, "--port", port]


def check_version():
    result = serial_board.run(esptool() + ["version"], capture=True)
    sys.stdout.write(result.stdout)
    found = re.search(r"(\d+)\.\d+", result.stdout or "")
    if result.returncode != 0 or not found:
        sys.exit("flash: `esptool version` failed: {}".format(
            serial_board.last_line(result.stderr or result.stdout)))
    if int(found.group(1)) < ESPTOOL_MAJOR:
        sys.exit("flash: esptool {} found; these commands are esptool v5's (write-flash, "
                 "erase-flash): `.venv/bin/pip install 'esptool>=5'`".format(found.group(0)))


def read_image(path):
    """The image's bytes, if it is an ESP32-S3 image; SystemExit otherwise."""
    if not path:
        sys.exit("flash: no FIRMWARE given: make flash PORT=/dev/ttyACM0 FIRMWARE=firmware.bin "
                 "(MicroPython for ESP32_GENERIC_S3 from micropython.org, or build/firmware/"
                 "firmware.bin from `make firmware`)")
    if not os.path.isfile(path):
        sys.exit("flash: FIRMWARE={} does not exist".format(path))
    with open(path, "rb") as f:
        image = f.read()
    if len(image) < CHIP_ID_OFFSET + 2 or image[0] != IMAGE_MAGIC:
        sys.exit("flash: {} is not an ESP32 firmware image (it does not start with 0x{:02x})"
                 .format(path, IMAGE_MAGIC))
    chip_id = struct.unpack_from("<H", image, CHIP_ID_OFFSET)[0]
    if chip_id != S3_CHIP_ID:
        sys.exit("flash: {} is built for {}, not for the {}".format(
            path, CHIP_IDS.get(chip_id, "chip id {}".format(chip_id)), CHIP))
    return image


def image_table(image):
    """The partition table inside a full image, or None for an app image alone."""
    start = partition_table.TABLE_OFFSET
    parts = []
    for pos in range(start, start + TABLE_MAX_SIZE, TABLE_ENTRY.size):
        if len(image) < pos + TABLE_ENTRY.size:
            break
        magic, ptype, subtype, offset, size, label, _flags = TABLE_ENTRY.unpack_from(image, pos)
        if magic != TABLE_MAGIC:
            break  # 0xebeb (MD5 entry) or 0xffff (end)
        name = label.rstrip(b"\0").decode("ascii", "replace")
        parts.append(partition_table.Partition(name, ptype, subtype, offset, size, ""))
    return parts or None


def table_differences(image_parts, csv_parts):
    """Lines naming each partition placed differently in the image than in partitions.csv."""
    mine = dict((p.name, (p.offset, p.size)) for p in csv_parts)
    theirs = dict((p.name, (p.offset, p.size)) for p in image_parts)
    lines = []
    for name in sorted(set(mine) | set(theirs)):
        if mine.get(name) != theirs.get(name):
            lines.append("  {:<9} image: {:<22} partitions.csv: {}".format(
                name, _place(theirs.get(name)), _place(mine.get(name))))
    return lines


def _place(where):
    return "{:#x}, {:#x} bytes".format(*where) if where else "-"


def plan(image, firmware, csv_parts):
    """(pieces to write, otadata partition or None, notes) for this image."""
    parts = image_table(image)
    if parts is None:
        slot = next(p for p in csv_parts if p.type == "app")
        if len(image) > slot.size:
            sys.exit("flash: {} ({} bytes) does not fit the {} slot ({} bytes)".format(
                firmware, len(image), slot.name, slot.size))
        otadata = next((p for p in csv_parts if p.type == "data" and p.subtype == "ota"), None)
        return [Piece(slot.offset, firmware, "app -> " + slot.name)], otadata, []
    app = next((p for p in parts if p.type == APP_TYPE), None)
    if app is None or len(image) <= app.offset:
        sys.exit("flash: {} has a partition table but no app after it".format(firmware))
    if len(image) - app.offset > app.size:
        sys.exit("flash: the app in {} ({} bytes) does not fit its {} slot ({} bytes)".format(
            firmware, len(image) - app.offset, app.name, app.size))
    first_partition = min(p.offset for p in parts)
    os.makedirs(WORK_DIR, exist_ok=True)
    stem = os.path.join(WORK_DIR, os.path.splitext(os.path.basename(firmware))[0])
    pieces = [Piece(0, stem + ".boot.bin", "bootloader + partition table"),
              Piece(app.offset, stem + ".app.bin", "app -> " + app.name)]
    for piece, data in zip(pieces, (image[:first_partition], image[app.offset:])):
        with open(piece.path, "wb") as f:
            f.write(data)
    otadata = next((p for p in parts if (p.type, p.subtype) == OTADATA), None)
    notes = table_differences(parts, csv_parts)
    if notes:
        notes = (["the image's partition table is not partitions.csv's; where they differ, "
                  "what the board held there is no longer found (a moved vfs is formatted "
                  "empty: copy your /data off first with mpremote):"] + notes)
    return pieces, otadata, notes


def flash(port, firmware, partitions):
    serial_board.require_port("flash", port, "make flash PORT=/dev/ttyACM0 FIRMWARE=firmware.bin")
    image = read_image(firmware)
    pieces, otadata, notes = plan(image, firmware, partition_table.read(partitions))
    check_version()
    for note in notes:
        print("flash: " + note if not note.startswith("  ") else note)
    for piece in pieces:
        print("flash: {:#x} {} ({})".format(piece.offset, serial_board.shown(piece.path),
                                           piece.what))
    print("flash: nvs (settings), phy_init and vfs (files, /data included) are not written")
    if otadata:
        print("flash: erasing otadata so the board boots the app just written")
        _esptool("flash", port, ["erase-region", hex(otadata.offset), hex(otadata.size)])
    args = ["write-flash"]
    for piece in pieces:
        args += [hex(piece.offset), piece.path]
    _esptool("flash", port, args)
    print("flash: done; the board restarts into the new firmware")


def erase(port):
    serial_board.require_port("erase", port, "make erase PORT=/dev/ttyACM0")
    check_version()
    print("erase: this wipes the WHOLE flash: firmware, settings (nvs) and every file, the "
          "owner's memory and sessions in /data included. Flash firmware again afterwards.")
    _esptool("erase", port, ["erase-flash"])


def _esptool(who, port, args):
    result = serial_board.run(on_board(port) + args)
    if result.returncode != 0:
        sys.exit("{}: no board answered on {} (esptool exit status {}; its message is above). Is "
                 "another program using the port? If the board does not enter its bootloader, "
                 "hold BOOT, press RESET, release BOOT and try again.".format(
                     who, port, result.returncode))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("flash", "erase"))
    parser.add_argument("--port", default="")
    parser.add_argument("--firmware", default="")
    parser.add_argument("--partitions", default=os.path.join(serial_board.ROOT, "partitions.csv"))
    args = parser.parse_args(argv)
    if args.action == "erase":
        erase(args.port)
    else:
        flash(args.port, args.firmware, args.partitions)


if __name__ == "__main__":
    main()
