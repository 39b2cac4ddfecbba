# `make bundle`: every module compiled for the S3, boot files kept as source, a truthful manifest.
import hashlib
import json
import os
import subprocess
import sys

from tests.runtimes import MICROPYTHON

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUNDLE = [sys.executable, os.path.join(ROOT, "tools", "bundle.py")]
MPY_V6 = b"M\x06"  # .mpy format 6: MicroPython 1.22 and later, the S3's stock firmware included


def bundle(out, *args):
    return subprocess.run(BUNDLE + ["--out", str(out)] + list(args), cwd=ROOT,
                          capture_output=True, text=True)


def firmware_modules():
    base = os.path.join(ROOT, "firmware")
    found = set()
    for folder, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "www")]
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), base).replace(os.sep, "/")
            if name.endswith(".py") and rel not in ("main.py", "romfs_boot.py"):
                found.add(rel)
    return found


def test_bundle_of_the_firmware(tmp_path):
    out = tmp_path / "bundle"
    result = bundle(out)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    files = {str(p.relative_to(out)).replace(os.sep, "/") for p in out.rglob("*") if p.is_file()}
    assert set(manifest) == files - {"manifest.json"}
    for rel, entry in manifest.items():
        data = (out / rel).read_bytes()
        assert entry == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    # Every firmware module, compiled for the S3; main.py, boot.py and romfs_boot.py stay source.
    for rel in firmware_modules():
        mpy = (out / "lib" / (rel[:-3] + ".mpy")).read_bytes()
        assert mpy[:2] == MPY_V6, rel
    assert not any(rel.endswith(".py") for rel in files - {"main.py", "boot.py", "romfs_boot.py"})
    with open(os.path.join(ROOT, "firmware", "main.py")) as f:
        assert (out / "main.py").read_text() == f.read()
    assert (out / "boot.py").exists()
    for name in ("__init__", "microdot", "websocket", "helpers"):
        assert "lib/microdot/{}.mpy".format(name) in manifest
    shipped = os.listdir(os.path.join(ROOT, "firmware", "certs"))
    certs = sorted(n for n in shipped if n.endswith(".der"))
    assert certs and sorted(os.listdir(out / "certs")) == certs
    # MicroPython imports the compiled package from the bundle's lib/ (no source on the path).
    script = ("import sys\nsys.path[:0] = [{!r}, {!r}]\nimport mimi.app, microdot.websocket\n"
              "print(mimi.app.__file__)\n").format(os.path.join(ROOT, "host_sim", "standins"),
                                                 str(out / "lib"))
    ran = subprocess.run(MICROPYTHON + ["-c", script], cwd=str(tmp_path), capture_output=True,
                         text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().endswith("lib/mimi/app.mpy")
    # The size table names each module and the total.
    assert "lib/mimi/settings/__init__.mpy" in result.stdout and "total" in result.stdout


def test_bundle_stops_at_the_first_module_mpy_cross_rejects(tmp_path):
    firmware = tmp_path / "firmware"
    (firmware / "mimi").mkdir(parents=True)
    (firmware / "mimi" / "__init__.py").write_text("")
    (firmware / "mimi" / "a_good.py").write_text("X = 1\n")
    (firmware / "mimi" / "b_bad.py").write_text("def broken(:\n    pass\n")
    (firmware / "mimi" / "c_later.py").write_text("Y = 2\n")
    out = tmp_path / "bundle"
    result = bundle(out, "--firmware", str(firmware))
    assert result.returncode != 0
    assert "SyntaxError" in result.stderr  # mpy-cross's own message
    assert "b_bad.py" in result.stderr
    assert (out / "lib" / "mimi" / "a_good.mpy").exists()
    assert not (out / "lib" / "mimi" / "c_later.mpy").exists()
    assert not (out / "manifest.json").exists()
