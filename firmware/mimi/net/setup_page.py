# The onboarding access point's setup page: WiFi, bot token and API key, saved to NVS.
from microdot import Microdot, Response

from mimi.platform import const, log
from mimi.storage import files

PAGE_NAME = "setup.html"
PAGE_CHUNK = const(1024)  # the page is streamed from flash in pieces this big
# Form field -> setting. A blank token or key keeps what is saved; a blank password: open network.
FIELDS = (
    ("ssid", "wifi_config", "ssid"),
    ("password", "wifi_config", "password"),
    ("bot_token", "tg_config", "bot_token"),
    ("api_key", "llm_config", "api_key"),
)
_KEEP_IF_BLANK = ("bot_token", "api_key")
_ANSWER_PAGE = ("<!doctype html><meta charset=utf-8>"
                "<meta name=viewport content='width=device-width'><title>MimiClaw setup</title>"
                "<h1>{}</h1><p>{}</p><p><a href=/>Back</a></p>")


def _escape(text):
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;")


def _answer(status, text):
    body = _ANSWER_PAGE.format("Saved" if status == 200 else "Not saved", _escape(text))
    return Response(body, status, {"Content-Type": "text/html; charset=utf-8"})


def web_app(app):
    """GET / is the form (www/setup.html); POST /save stores it through app.config."""
    web = Microdot()

    @web.get("/")
    async def page(request):
        path = app.www_dir + "/" + PAGE_NAME
        if not files.exists(path):
            return Response("The setup page is missing: copy www/setup.html to the flash.\n", 404)
        response = Response.send_file(path, content_type="text/html; charset=utf-8")
        response.send_file_buffer_size = PAGE_CHUNK
        response.headers["Cache-Control"] = "no-store"
        return response

    @web.post("/save")
    async def save(request):
        form = request.form or {}
        ssid = (form.get("ssid") or "").strip()
        if not ssid:
            return _answer(400, "The WiFi name is needed.")
        saved = []
        try:
            for field, ns, key in FIELDS:
                value = form.get(field) or ""
                if field in _KEEP_IF_BLANK and not value.strip():
                    continue
                app.config.set(ns, key, value)  # ValueError text never quotes the value
                saved.append(field)
        except (ValueError, TypeError) as exc:
            return _answer(400, "Not saved: {}".format(exc))
        log("setup: saved {} from the setup page; joining '{}'".format(", ".join(saved), ssid))
        return _answer(200, "MimiClaw is joining '{}' now. This access point closes once it is "
                            "connected; if it stays, the password was wrong: reload the page and "
                            "try again.".format(ssid))

    return web
