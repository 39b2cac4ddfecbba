# `make firmware`, `make deploy`, `make flash`/`erase`: the board definition, and the exact
# commands run against fake mpremote/esptool/make put in through $MPREMOTE, $ESPTOOL and PATH.
# Flashing itself runs the real esptool against an emulated board in tests/e2e/test_flash_board.py;
# here only what needs no board (a wrong image, no PORT) or an esptool the venv does not have.
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

from tests.runtimes import MICROPYTHON

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools")
BOARD = os.path.join(ROOT, "boards", "MIMICLAW_S3")
sys.path.insert(0, TOOLS)

import bundle  # noqa: E402
import deploy  # noqa: E402
import firmware  # noqa: E402
import flash  # noqa: E402
import partition_table  # noqa: E402

BOARD_SYS_PATH = ["", ".frozen", "/lib"]  # stock MicroPython on the ESP32-S3
FLASH_16MB = 16 * 1024 * 1024

# A board stand-in for mpremote: FAKE_BOARD is its file system. `run` executes the deploy's state
# script for real under the MicroPython unix port with ROOT pointed at that folder; fs mkdir/cp/rm
# act on it as the board would (mkdir of an existing folder fails, as on the board).
FAKE_MPREMOTE = r'''
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(["mpremote"] + args) + "\n")
root = os.environ["FAKE_BOARD"]
if args[0] != "connect" or not os.path.isdir(root):
    sys.stderr.write("mpremote: failed to access %s (it may be in use by another program)\n"
                     % args[1])
    sys.exit(1)
steps, step = [], []
for arg in args[2:] + ["+"]:
    if arg == "+":
        steps.append(step)
        step = []
    else:
        step.append(arg)
for step in steps:
    if step[0] == "run":
        with open(step[1]) as f:
            script = f.read().replace("ROOT = '/'", "ROOT = %r" % (root + "/"))
        out = subprocess.run(json.loads(os.environ["FAKE_MICROPYTHON"]) + ["-c", script],
                             capture_output=True, text=True)
        sys.stderr.write(out.stderr)
        for line in out.stdout.splitlines():
            if line.startswith("MIMI-DEPLOY "):
                state = json.loads(line[len("MIMI-DEPLOY "):])
                state["path"] = json.loads(os.environ["FAKE_SYS_PATH"])
                if os.environ.get("FAKE_MPY"):
                    state["mpy"] = int(os.environ["FAKE_MPY"])
                line = "MIMI-DEPLOY " + json.dumps(state)
            print(line)
    elif step[:2] == ["fs", "mkdir"]:
        os.mkdir(os.path.join(root, step[2][1:]))
    elif step[:2] == ["fs", "cp"]:
        shutil.copyfile(step[-2], os.path.join(root, step[-1][1:]))
    elif step[:2] == ["fs", "rm"]:
        os.remove(os.path.join(root, step[2][1:]))
    elif step != ["reset"]:
        sys.exit("fake mpremote: unexpected %r" % step)
'''

FAKE_ESPTOOL = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(["esptool"] + args) + "\n")
if args == ["version"]:
    version = os.environ.get("FAKE_ESPTOOL_VERSION", "5.6.0")
    print("esptool v%s\n%s" % (version, version))
'''

FAKE_MAKE = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"argv": ["make"] + args,
                        "microdot": os.environ.get("MIMICLAW_MICRODOT")}) + "\n")
port = args[1]
if port.endswith("ports/esp32") and "submodules" not in args:
    out = os.path.join(port, "build-MIMICLAW_S3-SPIRAM_OCT")
    os.makedirs(out)
    for name, data in (("firmware.bin", b"\xe9full"), ("micropython.bin", b"\xe9app")):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
'''


def fake_tool(folder, name, source):
    path = os.path.join(str(folder), name)
    with open(path, "w") as f:
        f.write("#!" + sys.executable + "\n" + source)
    os.chmod(path, 0o755)
    return path


def logged(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [json.loads(line) for line in f]


def run_tool(script, args, env):
    return subprocess.run([sys.executable, os.path.join(TOOLS, script)] + args, cwd=ROOT,
                          env=dict(os.environ, **env), capture_output=True, text=True)


def tree(root):
    """{relative posix path: bytes} of every file under root."""
    found = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root).replace(os.sep, "/")] = f.read()
    return found


# ---- deploy ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """deploy (building the bundle itself) onto a fresh fake board; what it leaves behind."""
    tmp = tmp_path_factory.mktemp("deploy")
    setup = _deploy_setup(tmp)
    board = setup["env"]["FAKE_BOARD"]
    os.makedirs(os.path.join(board, "data", "sessions"))
    with open(os.path.join(board, "data", "sessions", "tg_42.jsonl"), "w") as f:
        f.write('{"role": "user", "content": "remember me"}\n')
    bundle_dir = str(tmp / "bundle")
    result = run_tool("deploy.py", ["--port", setup["port"], "--bundle", bundle_dir],
                      setup["env"])
    return dict(setup, result=result, bundle=bundle_dir, tmp=tmp)


def _deploy_setup(tmp, sys_path=BOARD_SYS_PATH):
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    board = tmp / "board"
    board.mkdir(exist_ok=True)
    port = tmp / "ttyACM0"
    port.write_text("")
    env = {"MPREMOTE": fake_tool(bin_dir, "mpremote", FAKE_MPREMOTE),
           "FAKE_LOG": str(tmp / "mpremote.log"), "FAKE_BOARD": str(board),
           "FAKE_MICROPYTHON": json.dumps(MICROPYTHON), "FAKE_SYS_PATH": json.dumps(sys_path)}
    return {"env": env, "port": str(port), "board": str(board), "log": env["FAKE_LOG"]}


def _redeploy(setup, bundle_dir, extra_env=None):
    if os.path.exists(setup["log"]):
        os.remove(setup["log"])
    env = dict(setup["env"], **(extra_env or {}))
    result = run_tool("deploy.py", ["--port", setup["port"], "--bundle", bundle_dir,
                                    "--no-build"], env)
    return result, logged(setup["log"])


def _session(calls):
    """The second mpremote call (the copying session) as a list of steps."""
    assert len(calls) == 2, calls
    steps, step = [], []
    for arg in calls[1][3:] + ["+"]:
        if arg == "+":
            steps.append(step)
            step = []
        else:
            step.append(arg)
    return steps


def test_deploy_builds_the_bundle_and_copies_it_all_onto_a_fresh_board(built):
    result = built["result"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tools/bundle.py --out " + built["bundle"] in result.stdout
    with open(os.path.join(built["bundle"], "manifest.json")) as f:
        table = json.load(f)
    on_board = tree(built["board"])
    for rel, entry in table.items():
        assert rel in on_board, rel
        assert len(on_board[rel]) == entry["size"]
    assert json.loads(on_board[".bundle.json"]) == table
    calls = logged(built["log"])
    assert calls[0][:4] == ["mpremote", "connect", built["port"], "run"]
    steps = _session(calls)
    assert steps[-1] == ["reset"]
    copied = [s[-1] for s in steps if s[:2] == ["fs", "cp"]]
    assert sorted(copied) == sorted([":" + rel for rel in table] + [":.bundle.json"])
    assert copied[-1] == ":.bundle.json"  # written last: a deploy cut short is redone
    made = [s[2] for s in steps if s[:2] == ["fs", "mkdir"]]
    assert made.index(":lib") < made.index(":lib/mimi")
    for step in calls[1]:
        assert not step.startswith(":data") and not step.startswith(":/data")
    # the commands were printed as run
    assert "$ " in result.stdout and "fs cp -f" in result.stdout and "+ reset" in result.stdout


def test_deploy_leaves_data_alone(built):
    assert built["result"].returncode == 0
    on_board = tree(built["board"])
    assert on_board["data/sessions/tg_42.jsonl"] == b'{"role": "user", "content": "remember me"}\n'
    assert [rel for rel in on_board if rel.startswith("data/")] == ["data/sessions/tg_42.jsonl"]


def test_second_deploy_copies_only_what_changed(built):
    assert built["result"].returncode == 0
    bundle_dir = built["bundle"]
    result, calls = _redeploy(built, bundle_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _session(calls) == [["reset"]]
    assert "0 of" in result.stdout

    # One module changed on the board (say a half-finished copy) and one removed: only those two.
    board = built["board"]
    with open(os.path.join(board, "lib", "mimi", "platform.mpy"), "wb") as f:
        f.write(b"truncated")
    os.remove(os.path.join(board, "main.py"))
    result, calls = _redeploy(built, bundle_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _session(calls) == [
        ["fs", "cp", "-f", os.path.join(bundle_dir, "lib", "mimi", "platform.mpy"),
         ":lib/mimi/platform.mpy"],
        ["fs", "cp", "-f", os.path.join(bundle_dir, "main.py"), ":main.py"],
        ["fs", "cp", "-f", os.path.join(bundle_dir, "manifest.json"), ":.bundle.json"],
        ["reset"]]
    assert tree(board)["lib/mimi/platform.mpy"] == tree(bundle_dir)["lib/mimi/platform.mpy"]


def test_deploy_removes_what_an_earlier_deploy_left_but_never_data(built, tmp_path):
    assert built["result"].returncode == 0
    board = built["board"]
    # The previous deploy's manifest names a module the bundle no longer has, and a data file.
    with open(os.path.join(board, ".bundle.json")) as f:
        previous = json.load(f)
    previous["lib/mimi/renamed.mpy"] = {"size": 3, "sha256": "0" * 64}
    previous["data/config/SOUL.md"] = {"size": 3, "sha256": "0" * 64}
    with open(os.path.join(board, ".bundle.json"), "w") as f:
        json.dump(previous, f)
    for rel in ("lib/mimi/renamed.mpy", "data/config/SOUL.md"):
        os.makedirs(os.path.dirname(os.path.join(board, rel)), exist_ok=True)
        with open(os.path.join(board, rel), "wb") as f:
            f.write(b"old")
    result, calls = _redeploy(built, built["bundle"])
    assert result.returncode == 0, result.stdout + result.stderr
    steps = _session(calls)
    assert ["fs", "rm", ":lib/mimi/renamed.mpy"] in steps
    assert not any(":data" in arg for step in steps for arg in step)
    assert tree(board)["data/config/SOUL.md"] == b"old"
    assert "lib/mimi/renamed.mpy" not in tree(board)


def test_deploy_refuses_a_bundle_that_reaches_into_data(built, tmp_path):
    bundle_dir = tmp_path / "evil"
    shutil.copytree(built["bundle"], str(bundle_dir))
    with open(str(bundle_dir / "manifest.json")) as f:
        table = json.load(f)
    table["data/sessions/tg_42.jsonl"] = {"size": 1, "sha256": "0" * 64}
    with open(str(bundle_dir / "manifest.json"), "w") as f:
        json.dump(table, f)
    result, calls = _redeploy(built, str(bundle_dir))
    assert result.returncode != 0
    assert "refusing to write 'data/sessions/tg_42.jsonl'" in result.stderr
    assert calls == []


def test_deploy_without_port_or_board_fails_clearly(built, tmp_path):
    setup = _deploy_setup(tmp_path)
    no_port = run_tool("deploy.py", ["--no-build", "--bundle", built["bundle"]], setup["env"])
    assert no_port.returncode != 0
    assert "deploy: no PORT given: make deploy PORT=/dev/ttyACM0" in no_port.stderr

    missing = run_tool("deploy.py", ["--port", "/dev/ttyMIMI-none", "--no-build", "--bundle",
                                     built["bundle"]], setup["env"])
    assert "deploy: no board on /dev/ttyMIMI-none: the port does not exist" in missing.stderr

    os.rmdir(setup["board"])  # the fake mpremote finds no board
    silent = run_tool("deploy.py", ["--port", setup["port"], "--no-build", "--bundle",
                                    built["bundle"]], setup["env"])
    assert silent.returncode != 0
    assert ("deploy: no board on {}: mpremote: failed to access".format(setup["port"])
            in silent.stderr)
    assert len(logged(setup["log"])) == 1  # nothing tried after the board did not answer


def test_deploy_needs_lib_on_the_path_and_a_matching_mpy_version(built, tmp_path):
    setup = _deploy_setup(tmp_path, sys_path=["", ".frozen"])
    result, calls = _redeploy(setup, built["bundle"])
    assert result.returncode != 0
    assert "has no /lib" in result.stderr
    assert len(calls) == 1  # nothing copied

    setup = _deploy_setup(tmp_path)
    result, calls = _redeploy(setup, built["bundle"], {"FAKE_MPY": "5"})
    assert result.returncode != 0
    assert "reads .mpy version 5, the bundle's modules are version 6" in result.stderr
    assert len(calls) == 1


def test_board_script_runs_under_micropython_and_reads_only(tmp_path):
    board = tmp_path / "fs"
    (board / "lib").mkdir(parents=True)
    (board / "lib" / "a.mpy").write_bytes(b"abc")
    (board / "old.py").write_bytes(b"x")
    (board / ".bundle.json").write_text(json.dumps({"lib/a.mpy": {}, "old.py": {},
                                                    "data/x": {}}))
    before = tree(str(board))
    script = deploy.board_script(["lib/a.mpy", "lib/b.mpy"], ["lib", "www"],
                                 root=str(board) + "/")
    out = subprocess.run(MICROPYTHON + ["-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    state = json.loads(out.stdout.split(deploy.MARKER, 1)[1])
    assert state["hashes"] == {"lib/a.mpy": hashlib.sha256(b"abc").hexdigest(), "lib/b.mpy": None}
    assert state["dirs"] == ["lib"]
    assert state["stale"] == ["old.py"]
    assert state["mpy"] == 6
    assert tree(str(board)) == before


# ---- flash / erase ---------------------------------------------------------------------------

def _image_header(chip_id=flash.S3_CHIP_ID):
    header = bytearray(b"\xff" * 24)
    header[0] = flash.IMAGE_MAGIC
    struct.pack_into("<H", header, flash.CHIP_ID_OFFSET, chip_id)
    return bytes(header)


def _table(parts):
    kinds = {"app": 0, "data": 1}
    subtypes = {"nvs": 2, "ota": 0, "phy": 1, "ota_0": 0x10, "ota_1": 0x11, "factory": 0,
                "fat": 0x81}
    out = b""
    for p in parts:
        subtype = subtypes[p.subtype] if p.subtype in subtypes else int(p.subtype, 0)  # romfs: 0x8f
        out += partition_table.ENTRY.pack(partition_table.MAGIC, kinds[p.type], subtype,
                                          p.offset, p.size, p.name.encode(), 0)
    return out + b"\xff" * 32


def full_image(parts, chip_id=flash.S3_CHIP_ID, app_size=100000):
    """What MicroPython's makeimg.py writes: bootloader at 0, table at 0x8000, app at its slot."""
    app = next(p for p in parts if p.type == "app")
    image = bytearray(b"\xff" * app.offset)
    image[0:24] = _image_header(chip_id)
    table = _table(parts)
    image[0x8000:0x8000 + len(table)] = table
    return bytes(image) + _image_header(chip_id) + bytes(range(256)) * (app_size // 256)


@pytest.fixture
def esptool_env(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    port = tmp_path / "ttyACM0"
    port.write_text("")
    env = {"ESPTOOL": fake_tool(bin_dir, "esptool", FAKE_ESPTOOL),
           "FAKE_LOG": str(tmp_path / "esptool.log")}
    return {"env": env, "port": str(port), "tmp": tmp_path, "log": env["FAKE_LOG"]}


def test_flash_refuses_images_for_other_chips_and_non_images(esptool_env):
    parts = partition_table.read(os.path.join(ROOT, "partitions.csv"))
    wrong = esptool_env["tmp"] / "esp32.bin"
    wrong.write_bytes(full_image(parts, chip_id=0))
    result = run_tool("flash.py", ["flash", "--port", esptool_env["port"], "--firmware",
                                   str(wrong)], esptool_env["env"])
    assert result.returncode != 0
    assert "is built for esp32, not for the esp32s3" in result.stderr
    text = esptool_env["tmp"] / "notes.txt"
    text.write_text("hello")
    result = run_tool("flash.py", ["flash", "--port", esptool_env["port"], "--firmware",
                                   str(text)], esptool_env["env"])
    assert "is not an ESP32 firmware image" in result.stderr
    assert logged(esptool_env["log"]) == []


def test_flash_and_erase_fail_clearly_without_port_or_board(esptool_env):
    env = esptool_env["env"]
    result = run_tool("flash.py", ["flash", "--firmware", "x.bin"], env)
    assert "flash: no PORT given: make flash PORT=/dev/ttyACM0 FIRMWARE=firmware.bin" in \
        result.stderr
    result = run_tool("flash.py", ["erase"], env)
    assert "erase: no PORT given: make erase PORT=/dev/ttyACM0" in result.stderr
    result = run_tool("flash.py", ["erase", "--port", "/dev/ttyMIMI-none"], env)
    assert "erase: no board on /dev/ttyMIMI-none: the port does not exist" in result.stderr
    assert logged(esptool_env["log"]) == []


def test_flash_wants_esptool_v5(esptool_env):
    app_path = esptool_env["tmp"] / "micropython.bin"
    app_path.write_bytes(_image_header())
    result = run_tool("flash.py", ["flash", "--port", esptool_env["port"], "--firmware",
                                   str(app_path)], dict(esptool_env["env"],
                                                        FAKE_ESPTOOL_VERSION="4.8.1"))
    assert result.returncode != 0
    assert "esptool 4.8 found" in result.stderr
    assert logged(esptool_env["log"]) == [["esptool", "version"]]


def test_a_full_image_gives_its_bootloader_our_table_and_its_app_at_our_first_slot(tmp_path):
    """Wherever the image's table put its app, and whatever else that table says."""
    csv = tmp_path / "moved.csv"
    csv.write_text("nvs, data, nvs, 0x9000, 0x4000,\notadata, data, ota, 0xd000, 0x2000,\n"
                   "ota_0, app, ota_0, 0x20000, 0x200000,\nvfs, data, fat, 0x220000, 0x1e0000,\n")
    ours = partition_table.read(str(csv))
    stock = [partition_table.Partition("factory", "app", "factory", 0x10000, 0x300000, "")]
    image = full_image(stock)
    todo = flash.plan(image, "stock.bin", ours, "moved.csv")
    assert [(p.offset, p.what) for p in todo.pieces] == [
        (0, "bootloader, the image's"), (0x8000, "partition table, moved.csv"), (0x20000, "app -> ota_0")]
    assert [p.data for p in todo.pieces] == [image[:0x8000], partition_table.binary(ours), image[0x10000:]]
    assert todo.otadata.offset == 0xd000 and todo.full


def test_flash_refuses_a_partitions_file_it_cannot_write_before_asking_the_board(esptool_env):
    bad = esptool_env["tmp"] / "bad.csv"
    bad.write_text("nvs, data, nvs, 0x9000, 0x4000,\nota_0, app, ota_0, 0x18000, 0x100000,\n")
    image = esptool_env["tmp"] / "firmware.bin"
    image.write_bytes(full_image(partition_table.read(os.path.join(ROOT, "partitions.csv"))))
    result = run_tool("flash.py", ["flash", "--port", esptool_env["port"], "--firmware", str(image),
                                   "--partitions", str(bad)], esptool_env["env"])
    assert result.returncode != 0
    assert result.stderr.strip() == ("flash: bad.csv: partition ota_0: offset 0x18000 is not a multiple of "
                                     "0x10000; nothing was written")
    assert logged(esptool_env["log"]) == []


def test_venv_esptool_is_v5():
    out = subprocess.run([os.path.join(ROOT, ".venv", "bin", "esptool"), "version"],
                         capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.split()[1].startswith("v5.")


# ---- firmware: board definition and build command --------------------------------------------

def _read(name):
    with open(os.path.join(BOARD, name)) as f:
        return f.read()


def _sdkconfig(name):
    settings = {}
    for line in _read(name).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            settings[key] = value
    return settings


def test_board_cmake_names_files_that_exist():
    cmake = _read("mpconfigboard.cmake")
    assert "set(IDF_TARGET esp32s3)" in cmake
    # ESP32_GENERIC_S3's defaults (ports/esp32/boards/ESP32_GENERIC_S3/mpconfigboard.cmake)
    for name in ("boards/sdkconfig.base", "${SDKCONFIG_IDF_VERSION_SPECIFIC}",
                 "boards/sdkconfig.usb", "boards/sdkconfig.ble", "boards/sdkconfig.spiram_sx"):
        assert name in cmake
    assert "${MICROPY_BOARD_DIR}/sdkconfig.board" in cmake
    assert "set(MICROPY_FROZEN_MANIFEST ${MICROPY_BOARD_DIR}/manifest.py)" in cmake
    table = "${MICROPY_BOARD_DIR}/../../partitions.csv"
    assert table in cmake
    assert os.path.isfile(os.path.join(BOARD, "../../partitions.csv"))
    assert 'CONFIG_PARTITION_TABLE_CUSTOM_FILENAME=\\"${MIMICLAW_PARTITIONS_CSV}\\"' in cmake
    variant = _read("mpconfigvariant_{}.cmake".format(firmware.VARIANT))
    assert "boards/sdkconfig.spiram_oct" in variant and "boards/sdkconfig.240mhz" in variant
    assert "MICROPY_HW_MCU_NAME" in _read("mpconfigboard.h")


def test_sdkconfig_board_sets_16mb_custom_table_and_rollback():
    settings = _sdkconfig("sdkconfig.board")
    assert settings["CONFIG_PARTITION_TABLE_CUSTOM"] == "y"
    assert settings["CONFIG_BOOTLOADER_APP_ROLLBACK_ENABLE"] == "y"
    assert [k for k, v in settings.items() if k.startswith("CONFIG_ESPTOOLPY_FLASHSIZE_")
            and v == "y"] == ["CONFIG_ESPTOOLPY_FLASHSIZE_16MB"]
    # Kconfig reads "# CONFIG_X is not set" as a setting: no comment may start that way.
    assert not [line for line in _read("sdkconfig.board").splitlines()
                if line.startswith("# CONFIG_")]
    parts = partition_table.read(os.path.join(ROOT, "partitions.csv"))
    assert max(p.offset + p.size for p in parts) <= FLASH_16MB
    assert [p.subtype for p in parts if p.type == "app"] == ["ota_0", "ota_1"]
    partition_table.find(parts, "otadata")  # rollback needs it


def _run_manifest(environ=None):
    """Execute the board manifest as MicroPython's manifestfile.py does; the calls it made."""
    calls = []

    def record(kind):
        return lambda *args, **kwargs: calls.append((kind, args, kwargs))

    names = ("include", "package", "module", "freeze", "require")
    scope = dict((name, record(name)) for name in names)
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    os.chdir(BOARD)
    os.environ.update(environ or {})
    try:
        exec(_read("manifest.py"), scope)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return calls


def test_manifest_freezes_mimi_main_and_microdot(tmp_path):
    calls = _run_manifest()
    assert calls[0] == ("include", ("$(PORT_DIR)/boards/manifest.py",), {})
    package_calls = dict((c[1][0], c[2]) for c in calls if c[0] == "package")
    mimi_base = os.path.join(BOARD, package_calls["mimi"]["base_path"])
    assert os.path.isfile(os.path.join(mimi_base, "mimi", "__init__.py"))
    assert os.path.samefile(mimi_base, os.path.join(ROOT, "firmware"))
    module_calls = [c for c in calls if c[0] == "module"]
    assert module_calls == [("module", ("main.py",), {"base_path": "../../firmware"})]
    microdot = package_calls["microdot"]
    assert tuple(microdot["files"]) == bundle.MICRODOT_MODULES
    for name in microdot["files"]:
        assert os.path.isfile(os.path.join(microdot["base_path"], "microdot", name))
    assert os.path.samefile(os.path.join(microdot["base_path"], "microdot"),
                            bundle.microdot_dir())

    vendored = tmp_path / "vendor" / "microdot"
    shutil.copytree(bundle.microdot_dir(), str(vendored))
    calls = _run_manifest({"MIMICLAW_MICRODOT": str(vendored)})
    microdot = dict((c[1][0], c[2]) for c in calls if c[0] == "package")["microdot"]
    assert microdot["base_path"] == str(tmp_path / "vendor")


def test_make_firmware_without_micropython_or_idf_says_what_is_missing():
    env = dict((k, v) for k, v in os.environ.items()
               if k not in ("MICROPY_DIR", "IDF_PATH", "MAKEFLAGS", "MAKELEVEL"))
    result = subprocess.run(["make", "--no-print-directory", "firmware"], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "firmware: cannot build here:" in result.stderr
    assert "MICROPY_DIR is not set" in result.stderr
    assert "IDF_PATH is not set" in result.stderr
    assert "idf.py is not on PATH" in result.stderr


def test_firmware_runs_the_board_build_with_esp_idf_present(tmp_path):
    micropython = tmp_path / "micropython"
    (micropython / "ports" / "esp32").mkdir(parents=True)
    (micropython / "ports" / "esp32" / "Makefile").write_text("")
    idf = tmp_path / "esp-idf"
    idf.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_tool(bin_dir, "idf.py", "")
    fake_tool(bin_dir, "make", FAKE_MAKE)
    log = tmp_path / "make.log"
    env = {"PATH": str(bin_dir) + os.pathsep + os.environ["PATH"], "IDF_PATH": str(idf),
           "FAKE_LOG": str(log)}
    out = tmp_path / "out"
    result = run_tool("firmware.py", ["--micropython", str(micropython), "--out", str(out)], env)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = logged(str(log))
    port = str(micropython / "ports" / "esp32")
    board = ["BOARD_DIR=" + BOARD, "BOARD_VARIANT=SPIRAM_OCT"]
    assert [c["argv"] for c in calls] == [
        ["make", "-C", str(micropython / "mpy-cross")],
        ["make", "-C", port] + board + ["submodules"],
        ["make", "-C", port] + board + ["FROZEN_MANIFEST=" + os.path.join(BOARD, "manifest.py")]]
    assert calls[-1]["microdot"] == bundle.microdot_dir()
    assert (out / "firmware.bin").read_bytes() == b"\xe9full"
    assert (out / "micropython.bin").read_bytes() == b"\xe9app"
    for call in calls:
        assert "$ " + " ".join(call["argv"]) in result.stdout
