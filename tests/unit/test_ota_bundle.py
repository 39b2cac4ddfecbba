# Bundle updates: changed files staged and verified, swapped in only all together, the old ones kept.
import json

from mimi.ota import bundle
from mimi.ota.image import UpdateError
from mimi.storage import files
from ota_fakes import FakeResponse, sha256_hex
from support import raises, read, remove_tree, run, tempdir, write

BASE = "https://updates.example/b/"


def _board():
    """A board root as deployed: main.py, lib/, certs/, the owner's data/ and the old manifest."""
    root = tempdir("bundle")
    for path, text in (("main.py", "old main"), ("lib/mimi/a.py", "A = 1"), ("lib/mimi/b.py", "B = 1"),
                       ("lib/mimi/gone.py", "stale"), ("data/config/SOUL.md", "my soul")):
        files.makedirs(root + "/" + path.rsplit("/", 1)[0] if "/" in path else root)
        write(root + "/" + path, text)
    old = {p: {"size": 5, "sha256": "00" * 32} for p in ("main.py", "lib/mimi/a.py", "lib/mimi/b.py", "lib/mimi/gone.py")}
    write(root + "/manifest.json", json.dumps(old))
    return root


def _server(new_files, overrides=None):
    """A get(url) serving a manifest of new_files and the files (overrides: url -> FakeResponse)."""
    manifest = {p: {"size": len(d), "sha256": sha256_hex(d)} for p, d in new_files.items()}
    body = json.dumps(manifest).encode()
    fetched = []

    async def get(url):
        fetched.append(url)
        if overrides and url in overrides:
            return overrides[url]
        if url == BASE + "manifest.json":
            return FakeResponse(body)
        path = url[len(BASE) :]
        if path in new_files:
            return FakeResponse(new_files[path])
        return FakeResponse(b"not found", status=404)

    return get, fetched, body


NEW = {"main.py": b"old main", "lib/mimi/a.py": b"A = 2", "lib/mimi/b.py": b"B = 1", "lib/mimi/c.py": b"C = 1"}


def _update(root, get, url=BASE, manifest_hash=None):
    lines = []
    result = run(bundle.BundleUpdate(root, url, manifest_hash, get, lines.append).run())
    return result, lines


def test_changed_files_are_swapped_in_and_the_old_ones_kept_in_the_backup():
    root = _board()
    try:
        get, fetched, body = _server(NEW)
        (changed, removed), lines = _update(root, get, BASE + "manifest.json")
        assert changed == ["lib/mimi/a.py", "lib/mimi/c.py"] and removed == ["lib/mimi/gone.py"]
        assert BASE + "main.py" not in fetched and BASE + "lib/mimi/b.py" not in fetched  # unchanged: not fetched
        assert read(root + "/lib/mimi/a.py") == "A = 2" and read(root + "/lib/mimi/c.py") == "C = 1"
        assert not files.exists(root + "/lib/mimi/gone.py")
        assert read(root + "/.ota_backup/lib/mimi/a.py") == "A = 1"
        assert read(root + "/.ota_backup/lib/mimi/gone.py") == "stale"
        assert read(root + "/data/config/SOUL.md") == "my soul"
        assert read(root + "/manifest.json", "rb") == body
        assert not files.exists(root + "/.ota_stage")
        assert "ota_bundle: 2 of 4 files changed, 1 removed" in lines
        assert "ota_bundle: [2/2] lib/mimi/c.py verified" in lines
        # run again: up to date
        assert _update(root, get)[0] == ([], [])
    finally:
        remove_tree(root)


def _unchanged(root):
    assert read(root + "/lib/mimi/a.py") == "A = 1" and read(root + "/lib/mimi/gone.py") == "stale"
    assert not files.exists(root + "/lib/mimi/c.py")
    assert not files.exists(root + "/.ota_stage")
    assert json.loads(read(root + "/manifest.json"))["main.py"]["sha256"] == "00" * 32


def test_a_file_whose_hash_does_not_match_changes_nothing():
    root = _board()
    try:
        get, _, _ = _server(NEW, {BASE + "lib/mimi/c.py": FakeResponse(b"C = 9")})
        exc = raises(UpdateError, _update, root, get)
        assert "lib/mimi/c.py: got 5 bytes with SHA-256" in str(exc)
        _unchanged(root)
    finally:
        remove_tree(root)


def test_a_connection_cut_mid_bundle_changes_nothing():
    root = _board()
    try:
        get, _, _ = _server(NEW, {BASE + "lib/mimi/c.py": FakeResponse(b"C = 1", cut_after=2)})
        raises(OSError, _update, root, get)
        _unchanged(root)
        get, _, _ = _server(NEW, {BASE + "lib/mimi/c.py": FakeResponse(b"", status=404)})
        assert "HTTP 404" in str(raises(UpdateError, _update, root, get))
        _unchanged(root)
    finally:
        remove_tree(root)


def test_a_failed_swap_puts_the_previous_files_back():
    root = _board()
    try:
        write(root + "/www", "a file where the bundle wants a folder")
        new = dict(NEW)
        new["www/index.html"] = b"<html>"
        get, _, _ = _server(new)
        exc = raises(UpdateError, _update, root, get)
        assert "the previous files are back" in str(exc)
        _unchanged(root)
        assert read(root + "/www") == "a file where the bundle wants a folder"
    finally:
        remove_tree(root)


def test_paths_outside_the_bundle_are_refused():
    for bad in ("data/config/SOUL.md", "../etc/x", "/main.py", "lib/../data/x", "tools/tool_x.py",
                ".ota_backup/x", "manifest.json", "lib//x"):
        root = _board()
        try:
            get, _, _ = _server({"main.py": b"new", bad: b"evil"})
            exc = raises(UpdateError, _update, root, get)
            assert "may not write" in str(exc)
            assert read(root + "/main.py") == "old main" and read(root + "/data/config/SOUL.md") == "my soul"
        finally:
            remove_tree(root)


def test_the_manifest_hash_is_checked_when_given():
    root = _board()
    try:
        get, _, body = _server(NEW)
        exc = raises(UpdateError, _update, root, get, BASE, "ab" * 32)
        assert "manifest SHA-256 mismatch" in str(exc)
        _unchanged(root)
        assert _update(root, get, BASE, sha256_hex(body))[0][0] == ["lib/mimi/a.py", "lib/mimi/c.py"]
    finally:
        remove_tree(root)


def test_manifests_are_validated():
    raises(UpdateError, bundle.parse_manifest, "not json")
    raises(UpdateError, bundle.parse_manifest, "{}")
    raises(UpdateError, bundle.parse_manifest, '{"a.py": {"size": 1}}')
    raises(UpdateError, bundle.parse_manifest, '{"a.py": {"size": 1, "sha256": "xyz"}}')
    assert bundle.parse_manifest('{"a.py": {"size": 1, "sha256": "%s"}}' % ("AB" * 32)) == {"a.py": (1, "ab" * 32)}
    assert bundle.base_of("https://x/b") == "https://x/b/" and bundle.base_of("https://x/b/manifest.json") == "https://x/b/"
    raises(UpdateError, bundle.BundleUpdate, "/", "http://x/b")


def test_the_real_bundle_manifest_format_parses():
    # the format tools/bundle.py writes (build/bundle/manifest.json)
    text = '{\n "boot.py": {\n  "sha256": "%s",\n  "size": 103\n },\n "lib/mimi/app.mpy": {\n  "sha256": "%s",\n  "size": 4000\n }\n}\n' % (
        "7b" * 32, "01" * 32)
    assert sorted(bundle.parse_manifest(text)) == ["boot.py", "lib/mimi/app.mpy"]
