# The ROMFS form from the outside: `status` says the code runs from /rom, and `ota_bundle <url>.img`
# installs a new image (written at the restart, then run) or, with a wrong hash, changes nothing.
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from tests.e2e.conftest import API_KEY
from tests.e2e.test_ota import _after_reset, _booted, _publish_image, _trust, site  # noqa: F401  (site: a fixture)
from tests.runtimes import ROOT, romfs_runtime

# After an update the laptop holds two images in the heap: the process survives the reset, and the names
# the old image's modules interned still point into its buffer (the chip's reset clears that). The
# runner holds room for the second from the first boot (MIMI_SIM_ROMFS_UPDATE_ROOM).
RUNTIME = romfs_runtime("1536K")
UPDATE_ROOM = {"MIMI_SIM_ROMFS_UPDATE_ROOM": "1"}


@pytest.fixture
def runtime():
    return RUNTIME


@pytest.fixture(scope="module")
def new_image(tmp_path_factory):
    """A real image of the firmware with another version number: proof that the new one runs."""
    tmp = tmp_path_factory.mktemp("newrom")
    tree = tmp / "firmware"
    shutil.copytree(os.path.join(ROOT, "firmware"), str(tree), ignore=shutil.ignore_patterns("__pycache__"))
    init = tree / "mimi" / "__init__.py"
    text = init.read_text()
    assert 'VERSION = "' in text
    init.write_text(text.replace('VERSION = "', 'VERSION = "9.9.9-romfs+', 1))
    out = tmp / "new.img"
    made = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "romfs.py"), "build", "--out", str(out),
                           "--firmware", str(tree)], cwd=ROOT, capture_output=True, text=True)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    return out.read_bytes()


def _partition(flash):
    with open(str(flash) + "-romfs.bin", "rb") as f:
        return f.read()


def test_status_names_the_romfs_image(boot):
    dev = boot()
    out = dev.command("status")
    assert "Code: ROMFS image in /rom" in out


def test_ota_bundle_writes_a_new_image_at_the_restart_and_runs_it(boot, flash, site, new_image):  # noqa: F811
    folder, base, paths = site
    sha = _publish_image(folder, "rom1.img", new_image)
    _trust(flash, paths)
    dev = boot(env=UPDATE_ROOM)
    assert "saved" in dev.command("set_api_key " + API_KEY)
    dev.send("ota_bundle {}/rom1.img".format(base))
    dev.expect(r"ROMFS image of {} bytes verified \(SHA-256 {}\)".format(len(new_image), sha), 60)
    _after_reset(dev)
    assert "romfs: new image written and verified" in dev.output
    status = dev.command("status")
    assert "9.9.9-romfs+" in status and "Code: ROMFS image in /rom" in status
    assert _partition(flash)[: len(new_image)] == new_image
    assert sorted(n for n in os.listdir(str(flash)) if n.startswith("romfs_")) == []


def test_ota_bundle_image_with_a_wrong_hash_changes_nothing(boot, flash, site, new_image):  # noqa: F811
    folder, base, paths = site
    _publish_image(folder, "rom2.img", new_image)
    dev = _booted(boot, flash, paths)
    before = _partition(flash)
    out = dev.command("ota_bundle {}/rom2.img {}".format(base, "ab" * 32), timeout=60)
    assert "SHA-256 mismatch" in out and "the running firmware is unchanged" in out
    assert "--- reset ---" not in dev.output
    assert _partition(flash) == before
    assert hashlib.sha256(before).hexdigest() != hashlib.sha256(new_image).hexdigest()
    assert sorted(n for n in os.listdir(str(flash)) if n.startswith("romfs_")) == []
