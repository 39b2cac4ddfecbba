# Module updates on stock firmware: fetch a bundle manifest, stage every changed file, verify, swap in, keep a backup.
import binascii
import hashlib
import os

from mimi import jsontext, utf8
from mimi.net import http
from mimi.ota.image import DOWNLOAD_DEADLINE_S, READ_TIMEOUT_S, UpdateError, check_hash, check_https
from mimi.platform import const
from mimi.storage import files

MANIFEST = "manifest.json"  # {path: {"size": bytes, "sha256": hex}}, as tools/bundle.py writes it
STAGE_DIR = ".ota_stage"  # downloads wait here until every one is verified
BACKUP_DIR = ".ota_backup"  # the files the last update replaced
PROTECTED = ("data", "tools", STAGE_DIR, BACKUP_DIR)  # the owner's folders and ours: never written
_MANIFEST_MAX = const(65536)
_FILES_MAX = const(400)
FILE_MAX = const(1048576)  # one module, certificate or page
_CHUNK = const(1024)


def base_of(url):
    """The bundle's base URL (ending in '/') from its base or its manifest.json URL."""
    if url.endswith("/" + MANIFEST):
        return url[: -len(MANIFEST)]
    return url if url.endswith("/") else url + "/"


async def _get(url):
    return await http.request("GET", url, None, None, READ_TIMEOUT_S, None, DOWNLOAD_DEADLINE_S)


def check_path(path):
    """A manifest path the updater may write: relative, no '..', outside the protected folders."""
    parts = path.split("/")
    if (not path or path.startswith("/") or "\\" in path or path == MANIFEST
            or any(p in ("", ".", "..") for p in parts) or parts[0] in PROTECTED):
        raise UpdateError("the manifest names a path the updater may not write: '{}'".format(path[:80]))
    return path


def parse_manifest(text):
    """{path: (size, sha256)} from manifest JSON, every entry checked."""
    try:
        raw = jsontext.loads(text)
    except ValueError:
        raise UpdateError("the manifest is not JSON")
    if not isinstance(raw, dict) or not raw:
        raise UpdateError("the manifest lists no files")
    if len(raw) > _FILES_MAX:
        raise UpdateError("the manifest lists more than {} files".format(_FILES_MAX))
    table = {}
    for path, entry in raw.items():
        check_path(path)
        if not isinstance(entry, dict) or not isinstance(entry.get("size"), int) or "sha256" not in entry:
            raise UpdateError("the manifest entry for '{}' lacks size or sha256".format(path))
        if not 0 <= entry["size"] <= FILE_MAX:
            raise UpdateError("'{}' is larger than {} bytes".format(path, FILE_MAX))
        table[path] = (entry["size"], check_hash(str(entry["sha256"])))
    return table


def file_hash(path):
    """SHA-256 (hex) of a file, streamed; None when it is missing."""
    try:
        f = open(path, "rb")
    except OSError:
        return None
    digest = hashlib.sha256()
    buf = bytearray(_CHUNK)
    with f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            digest.update(memoryview(buf)[:n])
    return binascii.hexlify(digest.digest()).decode()


def remove_tree(path):
    if files.is_dir(path):
        for name in files.listdir(path):
            remove_tree(path + "/" + name)
        os.rmdir(path)
    else:
        files.remove(path)


def _parent(path):
    return path[: path.rfind("/")] if "/" in path else ""


def _move(src, dest):
    parent = _parent(dest)
    if parent:
        files.makedirs(parent)
    try:
        os.rename(src, dest)
    except OSError:
        if not files.exists(dest):
            raise
        os.remove(dest)  # a filesystem whose rename refuses to replace the target
        os.rename(src, dest)


class BundleUpdate:
    """One update of the files under root (the board's '/') from a bundle at base_url."""

    def __init__(self, root, url, manifest_hash=None, get=_get, progress=None):
        check_https(url)
        self.root = root if root == "/" else root.rstrip("/")
        self.base = base_of(url)
        self.manifest_hash = check_hash(manifest_hash) if manifest_hash else None
        self.get = get
        self.progress = progress or (lambda text: None)

    def live(self, path):
        return files.join(self.root, path)

    def stage(self, path):
        return files.join(self.live(STAGE_DIR), path)

    async def run(self):
        """Stage, verify and swap in every changed file. Returns (changed, removed) path lists."""
        text = await self._fetch_manifest()
        table = parse_manifest(text)
        changed = [p for p in sorted(table) if file_hash(self.live(p)) != table[p][1]]
        removed = [p for p in self._old_paths() if p not in table]
        if not changed and not removed:
            return changed, removed
        self.progress("ota_bundle: {} of {} files changed, {} removed".format(len(changed), len(table), len(removed)))
        remove_tree(self.live(STAGE_DIR))
        try:
            for i, path in enumerate(changed):
                await self._download(path, table[path][0], table[path][1])
                self.progress("ota_bundle: [{}/{}] {} verified".format(i + 1, len(changed), path))
            self._swap(changed, removed)
            files.write_atomic(self.live(MANIFEST), text)
        finally:
            remove_tree(self.live(STAGE_DIR))
        return changed, removed

    async def _fetch_manifest(self):
        resp = await self.get(self.base + MANIFEST)
        try:
            if resp.status != 200:
                raise UpdateError("no manifest at {} (HTTP {})".format(self.base + MANIFEST, resp.status))
            body = await resp.read(_MANIFEST_MAX)
        finally:
            await resp.aclose()
        if self.manifest_hash:
            got = binascii.hexlify(hashlib.sha256(body).digest()).decode()
            if got != self.manifest_hash:
                raise UpdateError("manifest SHA-256 mismatch: expected {}, got {}".format(self.manifest_hash, got))
        return utf8.valid_text(body)

    def _old_paths(self):
        try:
            return sorted(parse_manifest(files.read_text(self.live(MANIFEST), _MANIFEST_MAX) or ""))
        except UpdateError:  # no manifest from an earlier deploy: nothing is known to be stale
            return []

    async def _download(self, path, size, expected):
        dest = self.stage(path)
        files.makedirs(_parent(dest))
        resp = await self.get(self.base + path)
        try:
            if resp.status != 200:
                raise UpdateError("{}: HTTP {}".format(path, resp.status))
            digest = hashlib.sha256()
            total = await resp.save(dest, size, _CHUNK, digest)
            if total is None:
                raise UpdateError("{}: larger than the manifest's {} bytes".format(path, size))
        finally:
            await resp.aclose()
        got = binascii.hexlify(digest.digest()).decode()
        if total != size or got != expected:
            raise UpdateError("{}: got {} bytes with SHA-256 {}, the manifest says {} bytes, {}".format(
                path, total, got, size, expected))

    def _swap(self, changed, removed):
        """Every live file to the backup, every staged one in its place; undone on any failure."""
        backup = self.live(BACKUP_DIR)
        remove_tree(backup)
        saved, placed = [], []
        try:
            for path in changed + removed:
                if files.exists(self.live(path)):
                    _move(self.live(path), files.join(backup, path))
                    saved.append(path)
            for path in changed:
                _move(self.stage(path), self.live(path))
                placed.append(path)
        except OSError as exc:
            for path in placed:
                files.remove(self.live(path))
            for path in saved:
                _move(files.join(backup, path), self.live(path))
            raise UpdateError("swapping the new files in failed ({}); the previous files are back".format(exc))
        self.progress("ota_bundle: {} files swapped in; the previous ones are in /{}".format(len(changed), BACKUP_DIR))
