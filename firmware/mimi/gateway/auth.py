# The gateway token: made on first boot, checked in constant time, taken from ?token= or Bearer.
import binascii
import hashlib
import os

from mimi.gateway import TOKEN_KEY, TOKEN_NS
from mimi.platform import const, log

OFF = "off"  # stored as the token: none needed (blank means "not set": a new one is made)
_RANDOM_BYTES = const(18)  # 24 URL-safe characters
# A token's rule (8 to 128 of A-Z a-z 0-9 - _ . ~) is its setting's kind, checked by settings/values.py on every
# path that stores one.


def new_token():
    text = binascii.b2a_base64(os.urandom(_RANDOM_BYTES)).decode().strip()
    return text.replace("+", "-").replace("/", "_")


def current(config):
    """The token in force, made and saved now if none is set (first boot, after config_reset)."""
    token = config.get(TOKEN_NS, TOKEN_KEY)
    if not token:
        token = new_token()
        config.set(TOKEN_NS, TOKEN_KEY, token)
        log("gateway: made a new access token; the console command ws_token shows it")
    return token


def same(given, expected):
    """Compare without an early exit: the time taken tells nothing of how close a guess was."""
    a = given.encode() if isinstance(given, str) else bytes(given)
    b = expected.encode()
    diff = len(a) ^ len(b)
    if not a:
        return False
    for i in range(len(b)):
        diff |= a[i % len(a)] ^ b[i]
    return diff == 0


def credential(token):
    """What a live session keeps of the token it was opened with, to be ended when that token is no longer the one
    in force: None for none (the token off), else the token's SHA-256 (never the token itself)."""
    if token == OFF:
        return None
    return hashlib.sha256(token.encode()).digest()


def presented(request):
    """The token a request carries (?token= or Authorization: Bearer), or None."""
    token = request.args.get("token")
    if token:
        return token
    header = request.headers.get("Authorization") or ""
    if header[:7].lower() == "bearer ":
        return header[7:].strip() or None
    return None


def carries(request, token):
    """Does the request present this token (in constant time)?"""
    given = presented(request)
    return given is not None and same(given, token)
