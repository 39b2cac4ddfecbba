#!/usr/bin/env python3
"""`make check-api`: check firmware/ against the ESP32-S3 port's own API, so that a call that
exists only on CPython fails here and not on the board.

mypy checks the firmware with a typeshed made of `micropython-stdlib-stubs` overlaid with the
board's stubs (`micropython-esp32-esp32-generic-s3-stubs`): `time`, `os`, `json`, `ssl`... are
what ESP32_GENERIC_S3 has, plus `esp32`, `machine` and `network`. Only errors about the API are
reported (missing modules, attributes, wrong call forms); type-inference complaints are not
this check's business. Code that runs only where a feature test failed is the laptop's
fallback and is accepted:
  - the body of `except ImportError:` / `except AttributeError:` (also in a tuple),
  - the `else:` of `if hasattr(...)`, the body of `if not hasattr(...)`.
KNOWN_STUB_GAPS lists, one by one, the board features the published stubs lack.
"""
import argparse
import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARD_STUBS = "micropython-esp32-esp32-generic-s3-stubs"
STDLIB_STUBS = "micropython-stdlib-stubs"
# mypy error codes that say "this does not exist, or is not called so, on the board".
API_CODES = ("attr-defined", "name-defined", "import-not-found", "import-untyped", "import",
             "call-arg", "call-overload")
FALLBACK_ERRORS = ("ImportError", "AttributeError")
# Libraries the bundle ships (not the port's API; their own tests run on the unix port): any
# import from them is accepted as it is.
BUNDLED_LIBRARIES = ("microdot",)
# (file or None for any, message fragment, why it is right on the board)
KNOWN_STUB_GAPS = (
    ("mimi/net/tls.py", '"SSLContext" has no attribute "verify_mode"',
     "tls.SSLContext has verify_mode on the board (extmod/modtls_mbedtls.c); the stub omits it"),
    ("mimi/net/tls.py", 'No overload variant of "__setitem__" of "list"',
     "mypy infers list[None] for the one-slot cache `_context = [None]`; not an API question"),
    ("mimi/platform.py", 'Missing positional argument "transport" in call to "StreamReader"',
     "console_reader's CPython branch (after `if connect is None: return ...`)"),
    ("romfs_boot.py", 'Module has no attribute "VfsRom"',
     "vfs.VfsRom exists where MicroPython is built with MICROPY_VFS_ROM (the MIMICLAW_S3 board, "
     "boards with a romfs partition); the stubs are of a build without it, and boot() falls back"),
    (None, '"None" has no attribute',
     "a module global set at boot (`_app = None`, then setup(app) fills it): mypy types it None; "
     "not an API question"),
)
ERROR_LINE = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<msg>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")


def dist_root_and_files(name):
    dist = importlib.metadata.distribution(name)
    return str(dist.locate_file("")), [str(f) for f in dist.files or ()]


def build_typeshed(out):
    """build/typeshed: MicroPython's stdlib stubs with the S3 board's stubs laid over them."""
    stamp_text = " ".join(name + "==" + importlib.metadata.version(name)
                          for name in (STDLIB_STUBS, BOARD_STUBS)) + "\n"
    stamp = os.path.join(out, "STAMP")
    if os.path.exists(stamp) and open(stamp).read() == stamp_text:
        return
    if os.path.isdir(out):
        shutil.rmtree(out)
    site, files = dist_root_and_files(STDLIB_STUBS)
    for rel in files:
        top = rel.split("/", 1)[0]
        if rel.endswith(".pyi") or rel.endswith("VERSIONS"):
            if top in ("stdlib", "stubs"):
                dest = os.path.join(out, rel)
            elif top == "_mpy_shed":  # helpers the stubs import as a top-level package
                dest = os.path.join(out, "stdlib", rel)
            else:
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(site, rel), dest)
    site, files = dist_root_and_files(BOARD_STUBS)
    for rel in files:
        if rel.endswith(".pyi") and ".dist-info" not in rel:
            dest = os.path.join(out, "stdlib", rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(site, rel), dest)
    versions = os.path.join(out, "stdlib", "VERSIONS")
    with open(versions) as f:
        known = {line.split(":", 1)[0].strip() for line in f if ":" in line}
    with open(versions, "a") as f:  # the board's own modules, unknown to typeshed
        for name in sorted(os.listdir(os.path.join(out, "stdlib"))):
            module = name[:-4] if name.endswith(".pyi") else name
            if module not in known and module != "VERSIONS" and "." not in module:
                f.write("{}: 3.0-\n".format(module))
    with open(stamp, "w") as f:
        f.write(stamp_text)


def _catches_fallback(handler):
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in FALLBACK_ERRORS for n in names)


def _is_hasattr(test):
    return (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)
            and test.func.id == "hasattr")


def _lines(statements):
    lines = set()
    for node in statements:
        lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def fallback_lines(path):
    """Line numbers of the code that only runs where a feature test failed (the laptop)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if handler.type is not None and _catches_fallback(handler):
                    lines.update(range(handler.lineno, handler.end_lineno + 1))
        elif isinstance(node, ast.If):
            if _is_hasattr(node.test):
                lines.update(_lines(node.orelse))
            elif (isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
                  and _is_hasattr(node.test.operand)):
                lines.update(_lines(node.body))
    return lines


def targets(root):
    found = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.endswith(".py") or os.path.exists(os.path.join(path, "__init__.py")):
            found.append(name)
    return found


def check(root, typeshed, cache):
    build_typeshed(typeshed)
    with open(os.path.join(typeshed, "mypy.ini"), "w") as f:
        f.write("[mypy]\n")
        for name in BUNDLED_LIBRARIES:
            f.write("\n[mypy-{0},{0}.*]\nignore_missing_imports = True\n".format(name))
    # No site-packages: the board has the port's modules and the bundle, nothing from the venv.
    cmd = [sys.executable, "-m", "mypy", "--config-file", os.path.join(typeshed, "mypy.ini"),
           "--custom-typeshed-dir", typeshed, "--no-site-packages", "--cache-dir", cache,
           "--check-untyped-defs", "--explicit-package-bases", "--no-error-summary",
           "--show-error-codes", "--no-color-output", "--no-pretty"] + targets(root)
    print("$ (cd {}; {})".format(root, " ".join(cmd)), flush=True)
    result = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if result.returncode not in (0, 1):  # 2: mypy itself failed
        sys.stderr.write(result.stdout + result.stderr)
        sys.exit("check-api: mypy failed to run (see above)")
    problems, accepted, fallbacks = [], 0, {}
    for raw in result.stdout.splitlines():
        match = ERROR_LINE.match(raw)
        if not match:
            continue
        path, line, msg, code = match.group("path", "line", "msg", "code")
        if code not in API_CODES:
            continue
        rel = path.replace(os.sep, "/")
        full = os.path.join(root, path)
        if os.path.exists(full):
            if full not in fallbacks:
                fallbacks[full] = fallback_lines(full)
            if int(line) in fallbacks[full]:
                accepted += 1
                continue
        if any(gap[0] in (None, rel) and gap[1] in msg for gap in KNOWN_STUB_GAPS):
            accepted += 1
            continue
        problems.append(raw)
    return problems, accepted


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(ROOT, "firmware"),
                        help="source tree to check (default firmware/)")
    parser.add_argument("--typeshed", default=os.path.join(ROOT, "build", "typeshed"))
    parser.add_argument("--cache", default=os.path.join(ROOT, "build", "mypy-cache"))
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    problems, accepted = check(root, os.path.abspath(args.typeshed), os.path.abspath(args.cache))
    for line in problems:
        print(line)
    sys.stdout.flush()
    note = "{} accepted in laptop fallbacks and known stub gaps".format(accepted)
    if problems:
        sys.exit("check-api: {} call(s) the ESP32-S3 port does not have ({})".format(
            len(problems), note))
    shown = os.path.relpath(root, ROOT)
    print("check-api: {} uses only what the ESP32-S3 port has ({})".format(
        root if shown.startswith("..") else shown, note))


if __name__ == "__main__":
    main()
