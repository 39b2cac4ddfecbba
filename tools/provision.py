#!/usr/bin/env python3
"""`make provision`: an NVS partition image holding the board's settings, from provision.csv.

provision.csv (git-ignored; start from provision.example.csv) has rows `namespace,key,value`.
Each value is checked by the firmware's own rules (mimi.settings) and stored as the firmware
stores it: a UTF-8 blob that NVS.get_blob() reads back. The image, build/nvs.bin, is as large
as the `nvs` partition and is written at its offset, so a board boots configured without a
secret ever being typed into a console. Values are never printed.
"""
import argparse
import binascii
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "firmware"))
sys.path.insert(0, os.path.join(ROOT, "host_sim", "standins"))  # esp32, machine, network

import partition_table  # noqa: E402  (tools/, beside this file)
from mimi import settings  # noqa: E402

HEADER = ["namespace", "key", "value"]


class _CapturedNVS:
    """What Config.set() would write to one NVS namespace, kept in memory."""

    stored = {}  # {(namespace, key): bytes}

    def __init__(self, namespace):
        self.namespace = namespace

    def set_blob(self, key, value):
        data = value.encode() if isinstance(value, str) else bytes(value)
        _CapturedNVS.stored[(self.namespace, key)] = data

    def get_blob(self, key, buf):
        raise OSError("not stored")

    def erase_key(self, key):
        if _CapturedNVS.stored.pop((self.namespace, key), None) is None:
            raise OSError("not stored")

    def commit(self):
        pass


def read_settings(path):
    """{(namespace, key): bytes} as the firmware would store them; SystemExit on a bad row."""
    _CapturedNVS.stored = {}
    stored = settings.Config(nvs_class=_CapturedNVS)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        rows = [(reader.line_num, row) for row in reader
                if row and not row[0].lstrip().startswith("#")]
    if not rows or [cell.strip() for cell in rows[0][1]] != HEADER:
        sys.exit("provision: {} must start with the header row {}".format(path, ",".join(HEADER)))
    for line, row in rows[1:]:
        if len(row) != 3:
            sys.exit("provision: {} line {}: expected namespace,key,value (quote a value "
                     "that holds a comma)".format(path, line))
        ns, key, value = row[0].strip(), row[1].strip(), row[2]
        try:
            stored.set(ns, key, value)  # the settings' messages never quote a secret
        except (KeyError, ValueError, TypeError) as exc:
            sys.exit("provision: {} line {}: {}".format(path, line, exc))
    return dict(_CapturedNVS.stored)


def generator_csv(stored, path):
    """The esp-idf-nvs-partition-gen input: one namespace row, then its keys as hex2bin blobs."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w",
              newline="") as f:
        out = csv.writer(f)
        out.writerow(["key", "type", "encoding", "value"])
        namespaces = []
        for ns, _key in stored:
            if ns not in namespaces:
                namespaces.append(ns)
        for ns in namespaces:
            out.writerow([ns, "namespace", "", ""])
            for (entry_ns, key), data in stored.items():
                if entry_ns == ns:
                    # hex2bin makes a BLOB entry (get_blob); "string" would make a string entry
                    # that get_blob does not find.
                    out.writerow([key, "data", "hex2bin", binascii.hexlify(data).decode()])


def redact(text, stored):
    for data in stored.values():
        if len(data) >= 4:
            for secret in (data.decode("utf-8", "replace"), binascii.hexlify(data).decode()):
                text = text.replace(secret, "****")
    return text


def shown(path):
    """A path as the user would type it: relative to the repository when inside it."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", default=os.path.join(ROOT, "provision.csv"))
    parser.add_argument("--partitions", default=os.path.join(ROOT, "partitions.csv"))
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "nvs.bin"))
    parser.add_argument("--port", default="PORT", help="serial port shown in the flash command")
    args = parser.parse_args()
    if not os.path.exists(args.csv):
        sys.exit("provision: {} not found; copy provision.example.csv to it and fill it in"
                 .format(shown(os.path.abspath(args.csv))))
    stored = read_settings(args.csv)
    nvs = partition_table.find(partition_table.read(args.partitions), "nvs")
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "nvs.csv")
        generator_csv(stored, source)
        cmd = [sys.executable, "-m", "esp_idf_nvs_partition_gen", "generate", source, out,
               hex(nvs.size)]
        print("$ " + " ".join(cmd), flush=True)
        result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(redact(result.stdout + result.stderr, stored))
        sys.exit("provision: esp-idf-nvs-partition-gen failed (see above)")
    os.chmod(out, 0o600)  # NVS is not encrypted: the image holds the secrets in the clear
    print("provision: wrote {} ({} bytes): {}".format(
        shown(out), nvs.size, ", ".join(ns + "." + key for ns, key in stored) or
        "no settings"))
    print("Flash it (replaces every setting stored on the board; files are not touched):")
    print("  esptool --chip esp32s3 --port {} write-flash {:#x} {}".format(
        args.port, nvs.offset, shown(out)))


if __name__ == "__main__":
    main()
