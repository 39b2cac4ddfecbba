# One verifying TLS client context, trusting the CA certificates (DER) shipped on flash and added by the owner;
# in small-board mode one context per connection, with only the CAs of the host reached, let go with it.
import os
import ssl

from mimi import board
from mimi.platform import log

_context = [None]
_cert_dirs = []
# Small-board mode: the shipped roots behind the hosts a board reaches all day ("host root root...", one a
# line: Telegram's chain ends at Go Daddy's G2 root, Anthropic's at Google Trust Services' R1 (RSA) or R4
# (ECDSA)); the owner's own certificates are always added. A host not named tries the owner's certificates
# alone first (what they were added for: a server of their own), when there are any. A host refused with
# these (widen(): it changed its CA, or it is a public site) gets every certificate from then on, still only
# for as long as each connection lives.
_HOST_ROOTS = "\napi.telegram.org godaddy_root_g2\napi.anthropic.com gts_root_r1 gts_root_r4\n"
_widened = []  # hosts refused with their named roots: every certificate from then on (the latest few)
_WIDENED_MAX = 8


def configure(cert_dirs):
    """Folders of *.der CA certificates to trust; the context is rebuilt on next use."""
    _cert_dirs[:] = list(cert_dirs)
    _context[0] = None


def _der_files(roots=None):
    """Every *.der path; with `roots` (file stems, or [] for none), only those from the shipped folder (the
    first) and every one of the owner's."""
    for index, folder in enumerate(_cert_dirs):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".der") and (roots is None or index or name[:-4] in roots):
                yield folder + "/" + name


def roots_of(host):
    """The shipped roots named for host in small-board mode ([]: none, the owner's alone), or None (every
    certificate)."""
    if host in _widened:
        return None
    at = _HOST_ROOTS.find("\n" + host + " ")
    if at >= 0:
        return _HOST_ROOTS[at + len(host) + 2:_HOST_ROOTS.find("\n", at + 1)].split()
    return [] if _owner_has_any() else None


def _owner_has_any():
    for _ in _der_files([]):
        return True
    return False


def widen(host):
    """host refused the certificates it was given: True when every certificate is worth a try."""
    if not board.small() or roots_of(host) is None:
        return False
    if len(_widened) >= _WIDENED_MAX:
        _widened.pop(0)
    _widened.append(host)
    log("TLS: {} is not signed by the roots named for it; trying every CA certificate".format(host))
    return True


def _build(files):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.verify_mode = ssl.CERT_REQUIRED
    loaded = 0
    for path in files:
        with open(path, "rb") as f:
            der = f.read()
        try:
            ctx.load_verify_locations(cadata=der)  # MicroPython takes one DER certificate per call
            loaded += 1
        except (ValueError, OSError) as exc:
            log("TLS: skipping unreadable CA certificate {} ({})".format(path, exc))
        del der
    return ctx, loaded


def context(host=None):
    """The client context for host: CERT_REQUIRED, hostname checked. Shared and built once, except in
    small-board mode: then made for this connection with the roots of `host` only (about 2 KB each parsed,
    BENCHMARKS.md), and freed with it."""
    if host is not None and board.small():
        return _build(_der_files(roots_of(host)))[0]
    if _context[0] is None:
        _context[0], loaded = _build(_der_files())
        if not loaded:
            log("TLS: no CA certificates found; https connections will be refused")
    return _context[0]
