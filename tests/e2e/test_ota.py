# Updates and recovery from the outside: OTA images and rollback, bundle updates, watchdog, safe mode.
import functools
import hashlib
import http.server
import json
import os
import shutil
import threading

import pytest

from host_sim.fake_anthropic import stall, text
from tests.certs import make_test_ca, server_context
from tests.e2e.conftest import API_KEY
from tests.runtimes import MICROPYTHON, ROOT, micropython_firmware

IMAGE = b"\xe9" + os.urandom(20000)  # an app image starts with 0xE9


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An HTTPS file server (signed by a throwaway CA) over a folder: (folder, base URL, CA paths)."""
    paths = make_test_ca(tmp_path_factory.mktemp("ca"))
    folder = tmp_path_factory.mktemp("site")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    httpd.socket = server_context(paths).wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield folder, "https://localhost:{}".format(httpd.server_address[1]), paths
    httpd.shutdown()


def _trust(flash, paths):
    certs = flash / "data" / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copy(paths["ca.der"], certs / "test_ca.der")


def _publish_image(folder, name, data=IMAGE):
    (folder / name).write_bytes(data)
    (folder / (name + ".sha256")).write_text(hashlib.sha256(data).hexdigest() + "  " + name + "\n")
    return hashlib.sha256(data).hexdigest()


def _booted(boot, flash, paths, *args):
    _trust(flash, paths)
    dev = boot(*args)
    assert "saved" in dev.command("set_api_key " + API_KEY)
    return dev


def _after_reset(dev):
    dev.expect("--- reset ---", 30)
    return dev.ready()


def test_ota_installs_boots_the_new_slot_and_confirms_it_after_a_healthy_turn(boot, flash, fake, site):
    folder, base, paths = site
    _publish_image(folder, "good.bin")
    dev = _booted(boot, flash, paths)
    assert "Firmware: running ota_0, next boot ota_0" in dev.command("status")
    dev.send("ota {}/good.bin".format(base))
    dev.expect(r"ota: 20001 bytes written, SHA-256 verified; ota_1 is the boot slot now", 30)
    dev.expect("restarting into the new firmware")
    _after_reset(dev)
    out = dev.command("status")
    assert "Firmware: running ota_1, next boot ota_1" in out and "not yet proven healthy" in out
    assert (flash / "ota_1.bin").read_bytes()[: len(IMAGE)] == IMAGE
    fake.script(text("Still me."))
    dev.send("chat are you alive?")
    dev.expect(r"health: healthy boot \(a turn completed\); crash count cleared, firmware marked valid", 30)
    dev.send("restart")
    _after_reset(dev)
    assert "Firmware: running ota_1, next boot ota_1" in dev.command("status")  # no rollback


def test_ota_with_a_wrong_hash_is_refused_and_nothing_changes(boot, flash, site):
    folder, base, paths = site
    _publish_image(folder, "bad.bin")
    dev = _booted(boot, flash, paths)
    out = dev.command("ota {}/bad.bin {}".format(base, "0" * 64), timeout=30)
    assert "SHA-256 mismatch" in out and "the running firmware is unchanged" in out
    assert "Firmware: running ota_0, next boot ota_0" in dev.command("status")
    assert "--- reset ---" not in dev.output
    # an image the server does not have is refused just as clearly
    out = dev.command("ota {}/missing.bin".format(base), timeout=30)
    assert "no published hash" in out and "unchanged" in out


def test_a_new_firmware_that_never_proves_healthy_is_rolled_back(boot, flash, site):
    folder, base, paths = site
    _publish_image(folder, "unproven.bin")
    dev = _booted(boot, flash, paths)
    dev.send("ota {}/unproven.bin".format(base))
    _after_reset(dev)
    assert "Firmware: running ota_1" in dev.command("status")
    dev.send("restart")  # before any turn and before 60 s up: never confirmed
    _after_reset(dev)
    assert "Firmware: running ota_0, next boot ota_0" in dev.command("status")


def _module_dir(runtime, flash):
    """A copy of the modules the device runs, on its flash (lib/), as a bundle deploy leaves them."""
    lib = flash / "lib"
    if list(runtime) == MICROPYTHON and micropython_firmware():
        shutil.copytree(micropython_firmware()[1], lib)
    else:
        shutil.copytree(os.path.join(ROOT, "firmware", "mimi"), lib / "mimi",
                        ignore=shutil.ignore_patterns("__pycache__"))
    return lib


def test_ota_bundle_swaps_in_changed_modules_and_runs_them_after_the_reset(boot, runtime, flash, site):
    folder, base, paths = site
    lib = _module_dir(runtime, flash)
    bundle = folder / "bundle1"
    (bundle / "lib" / "mimi").mkdir(parents=True, exist_ok=True)
    (bundle / "www").mkdir(exist_ok=True)
    new_init = b'# MimiClaw-Py, updated by ota_bundle.\nVERSION = "0.1.0-ota"\n'
    (bundle / "lib" / "mimi" / "__init__.py").write_bytes(new_init)
    (bundle / "www" / "note.txt").write_bytes(b"hello")
    manifest = {p: {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                for p, d in (("lib/mimi/__init__.py", new_init), ("www/note.txt", b"hello"))}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    (flash / "data").mkdir(parents=True, exist_ok=True)
    dev = _booted(boot, flash, paths, "--firmware", str(lib))
    soul = (flash / "data" / "config" / "SOUL.md").read_bytes()
    dev.send("ota_bundle {}/bundle1/".format(base))
    dev.expect(r"ota_bundle: 2 of 2 files changed, 0 removed", 30)
    dev.expect(r"\[2/2\] www/note.txt verified")
    dev.expect("ota_bundle: 2 files swapped in")
    _after_reset(dev)
    assert "MimiClaw-Py 0.1.0-ota starting" in dev.output
    assert (flash / "www" / "note.txt").read_bytes() == b"hello"
    assert json.loads((flash / "manifest.json").read_text()) == manifest
    assert (flash / "data" / "config" / "SOUL.md").read_bytes() == soul
    assert not (flash / ".ota_stage").exists()
    out = dev.command("ota_bundle {}/bundle1/manifest.json".format(base), timeout=30)
    assert "every file is up to date" in out


def test_ota_bundle_with_a_corrupt_file_changes_nothing(boot, flash, site):
    folder, base, paths = site
    bundle = folder / "bundle2"
    bundle.mkdir(exist_ok=True)
    (bundle / "main.py").write_bytes(b"print('new')\n")
    manifest = {"main.py": {"size": 13, "sha256": "1" * 64}}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    dev = _booted(boot, flash, paths)
    out = dev.command("ota_bundle {}/bundle2".format(base), timeout=30)
    assert "main.py: got 13 bytes with SHA-256" in out and "unchanged" in out
    assert not (flash / "main.py").exists() and not (flash / ".ota_stage").exists()


def test_three_quick_crashes_start_safe_mode_and_restart_leaves_it(boot, flash, fake):
    flash.mkdir(parents=True)
    (flash / "crash_at_boot").write_text("3")  # test hook: the next 3 normal starts raise
    dev = boot()
    assert dev.output.count("crash: RuntimeError: crash injected at boot") == 3
    assert "(crash 3 in a row soon after boot)" in dev.output
    assert "SAFE MODE: 3 crashes in a row soon after boot" in dev.output
    dev.command("set_api_key " + API_KEY)
    assert "Health: SAFE MODE (3 crashes soon after boot)" in dev.command("status")
    out = dev.command("chat hello")
    assert "error: The device is in safe mode" in out
    assert fake.requests == []  # no agent: Claude was never called
    dev.send("restart")
    _after_reset(dev)
    tail = dev.output[dev.output.rindex("--- reset ---"):]
    assert "SAFE MODE" not in tail
    assert "Health: normal" in dev.command("status")


def test_a_healthy_run_clears_the_crash_count(boot, flash, fake):
    flash.mkdir(parents=True)
    (flash / "crash_at_boot").write_text("2")
    dev = boot()
    dev.command("set_api_key " + API_KEY)
    assert "2 early crashes" in dev.command("status")
    fake.script(text("Fine."))
    dev.send("chat hi")
    dev.expect(r"health: healthy boot \(a turn completed\); crash count cleared", 30)
    assert "0 early crashes" in dev.command("status")
    (flash / "crash_at_boot").write_text("2")
    dev.send("restart")
    _after_reset(dev)
    tail = dev.output[dev.output.rindex("(crash"):]
    assert "SAFE MODE" not in tail  # 2 more crashes after a healthy run: not 4 in a row
    assert "2 early crashes" in dev.command("status")


def test_an_agent_stuck_on_a_turn_starves_the_watchdog_and_resets_the_device(boot, fake):
    # the watchdog is fed once a second: a loaded machine's longer gaps (at boot, as a turn starts) stay within 5 s
    dev = boot("--health", "wdt_ms=5000,turn_s=2,healthy_s=3600")
    dev.command("set_api_key " + API_KEY)
    fake.script(stall("Thinking", seconds=30))
    dev.send("chat think hard")
    dev.expect(r"watchdog: the agent has been stuck on one turn for over 2 s; no longer feeding it", 30)
    dev.expect("--- reset ---", 10)
    dev.expect(r"health: the watchdog reset the device \(crash 1 in a row\)", 10)
    dev.ready()
    assert "1 early crashes" in dev.command("status")
