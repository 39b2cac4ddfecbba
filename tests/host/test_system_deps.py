# `make test` on a fresh machine: tools/system_deps.py finds, installs (root + apt-get) or names the
# Debian packages the tests drive (chromium, mosquitto). Run for real with PATH and --root pointed
# at empty folders, so this machine's own chromium is out of sight.
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "system_deps.py")
EXPECTED = ("make test needs the Debian package(s) chromium mosquitto (the web chat's browser tests, "
            "the MQTT tests): run `sudo apt-get install -y chromium mosquitto` and try again")
FAKE_APT = """#!{python}
import os, sys
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1] == "install":
    if {fail!r}:
        sys.exit(100)
    for path in ("usr/bin/chromium", "usr/sbin/mosquitto"):
        os.makedirs(os.path.dirname(os.path.join({root!r}, path)), exist_ok=True)
        open(os.path.join({root!r}, path), "w").close()
"""

def _run(tmp_path, path_dirs):
    env = {k: v for k, v in os.environ.items() if k != "MIMI_CHROMIUM"}
    env["PATH"] = os.pathsep.join(str(d) for d in path_dirs)
    return subprocess.run([sys.executable, TOOL, "--root", str(tmp_path / "debian")], env=env,
                          capture_output=True, text=True, timeout=60)


def _fake_apt(tmp_path, fail=False):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "apt-get"
    script.write_text(FAKE_APT.format(python=sys.executable, log=str(tmp_path / "apt.log"),
                                      root=str(tmp_path / "debian"), fail=fail))
    script.chmod(0o755)
    return bin_dir


def test_without_chromium_or_apt_get_it_stops_with_one_line_naming_the_packages(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _run(tmp_path, [tmp_path / "empty"])
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == EXPECTED + "\n"  # one line, exactly what to install


def test_what_is_present_is_not_asked_for(tmp_path):
    present = tmp_path / "debian" / "usr" / "bin"
    present.mkdir(parents=True)
    (present / "chromium").touch()
    (tmp_path / "empty").mkdir()
    done = _run(tmp_path, [tmp_path / "empty"])
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["make test needs the Debian package(s) mosquitto (the MQTT "
                                        "tests): run `sudo apt-get install -y mosquitto` and try again"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="installs only as root")
def test_as_root_with_apt_get_it_installs_what_is_missing(tmp_path):
    done = _run(tmp_path, [_fake_apt(tmp_path)])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "apt.log").read_text().splitlines() == [
        "update -qq", "install -y -qq chromium mosquitto"]
    again = _run(tmp_path, [tmp_path / "bin"])  # now present: nothing to do, nothing printed
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert len((tmp_path / "apt.log").read_text().splitlines()) == 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="installs only as root")
def test_a_failed_install_ends_with_the_same_one_line(tmp_path):
    done = _run(tmp_path, [_fake_apt(tmp_path, fail=True)])
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == EXPECTED


def test_make_test_checks_the_machine_before_anything_else():
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    planned = subprocess.run(["make", "--no-print-directory", "-n", "test"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=60).stdout.splitlines()
    assert "tools/system_deps.py" in planned[0]
