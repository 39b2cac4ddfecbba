# The matrix_* console commands (loaded when one is typed): log in once, who may talk, how it goes.
from mimi import matrix, platform


def _say(text):
    platform.console_write(text + "\n")


async def cmd_set(app, homeserver, user=None, password=None):
    cfg = app.config
    if homeserver == "off" and user is None:
        cfg.unset(matrix.NS, "token")  # the channel stops syncing; the allowlist stays
        _say("Matrix off: the board's access token is forgotten (matrix_set <homeserver-url> <user> <password> "
             "logs in again)")
        return
    if password is None:
        raise ValueError("usage: matrix_set <homeserver-url> <user> <password> | matrix_set off")
    from mimi.matrix.api import API, MatrixError
    from mimi.net.http import HTTPError
    from mimi.settings import values

    base = values.checked("homeserver", "url", None, None, homeserver, 512).rstrip("/")
    name = user[1:].split(":", 1)[0] if user.startswith("@") else user
    login = {"type": "m.login.password", "identifier": {"type": "m.id.user", "user": name}, "password": password,
             "initial_device_display_name": "MimiClaw board"}
    try:
        answer = await API(cfg).call("POST", "/_matrix/client/v3/login", login, token=False, base=base)
    except MatrixError as exc:
        why = "user or password refused" if exc.status == 403 else str(exc)
        _say("error: the homeserver did not log the board in: {} (nothing was saved)".format(why))
        return
    except (HTTPError, OSError, ValueError) as exc:
        _say("error: cannot reach {}: {} (nothing was saved)".format(base, exc))
        return
    token, user_id = answer.get("access_token"), answer.get("user_id")
    if not isinstance(token, str) or not isinstance(user_id, str):
        _say("error: the homeserver's answer holds no access token (nothing was saved)")
        return
    cfg.set(matrix.NS, "homeserver", base)  # first: moving it drops an old token
    cfg.set(matrix.NS, "user", user_id)
    cfg.set(matrix.NS, "device", str(answer.get("device_id") or ""))
    cfg.set(matrix.NS, "token", token)
    channel = app.part("matrix")
    held = app.health.held_back(channel)
    _say("Matrix: logged in as {} on {} (the password was not kept){}".format(
        user_id, base, "; Matrix starts after a normal boot: " + held if held else "; syncing now"))
    if not channel.users():
        _say("  nobody may talk to the board yet: matrix_allow <@user:server> [role]")


def _check_user(user):
    if not user.startswith("@") or ":" not in user or " " in user or "," in user or "=" in user:
        raise ValueError("a Matrix user id looks like @name:server, e.g. matrix_allow @alice:matrix.org")


def _channel(app):
    from mimi.channels.chat_app import for_console

    return for_console(app, "matrix", matrix.NS, "Matrix")


async def cmd_allow(app, user, role=None):
    from mimi.channels.chat_app import allow_said

    _check_user(user)
    _say(allow_said(_channel(app), user, role))


async def cmd_deny(app, user):
    from mimi.channels.chat_app import deny_said

    _say(deny_said(_channel(app), user))


def line(app):
    """The status command's line."""
    cfg = app.config
    if not matrix.configured(cfg):
        return "off (matrix_set <homeserver-url> <user> <password>)"
    channel = app.part("matrix")
    held = app.health.held_back(channel)
    if held:
        state = "not started on this boot: " + held
    elif channel.connected:
        state = "syncing"
    else:
        state = "connecting" + ("; last problem: " + channel.error if channel.error else "")
    return "{} on {}, {}".format(cfg.get(matrix.NS, "user"), cfg.get(matrix.NS, "homeserver"), state)


async def cmd_status(app):
    _say("Matrix: " + line(app))
    from mimi.channels.chat_app import allowed_said

    _say(allowed_said(_channel(app)))
    made = app.part("matrix")
    if made is not None:
        _say("  {} syncs, {} messages received, {} answered, {} replies waiting".format(
            made.syncs, made.received, made.answered, len(made.outbox)))
        if made.encrypted:
            _say("  encrypted rooms the board cannot read: {}".format(", ".join(made.encrypted)))
