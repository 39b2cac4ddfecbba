# The Bot API's HTTP surface: reading arguments (query, JSON, forms), writing answers and faults.
import json

from aiohttp import web

from host_sim.background_server import drop_connection
from host_sim.telegram_params import ApiError, as_arg
from host_sim.unicode_text import holds_surrogate

GATEWAY_ERRORS = {502: "Bad Gateway", 504: "Gateway Time-out"}  # nginx's HTML, not the API's JSON
NOT_UTF8 = "Bad Request: strings must be encoded in UTF-8"


def dumps(value):
    """JSON as the Bot API writes it: every non-ASCII character a \\u escape (a surrogate pair
    beyond the BMP: "\\ud83c\\udf55"), and "/" as "\\/"."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/")


async def read_args(request):
    """(string arguments as the server sees them, typed ones for the record, error or None)."""
    args, typed = dict(request.query), dict(request.query)
    if not request.body_exists:
        return args, typed, None
    if request.content_type == "application/json":
        try:
            body = json.loads((await request.read()).decode("utf-8") or "{}")
        except UnicodeDecodeError:
            return args, typed, ApiError(400, NOT_UTF8)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return args, typed, ApiError(400, "Bad Request: can't parse JSON object")
        if holds_surrogate(body):
            return args, typed, ApiError(400, NOT_UTF8)
        body = {k: v for k, v in body.items() if v is not None}
        typed.update(body)
        args.update((k, as_arg(v)) for k, v in body.items())
    else:
        form = await request.post()
        for key, value in form.items():
            if isinstance(value, str):
                args[key] = typed[key] = value
            else:  # a file part (multipart/form-data): its bytes for the method, its description for `calls`
                args[key] = Upload(value.filename, value.content_type, value.file.read())
                typed[key] = {"filename": value.filename, "content_type": value.content_type,
                              "size": len(args[key].data)}
    return args, typed, None


class Upload:
    """A file sent in a multipart request (sendVoice's voice)."""

    def __init__(self, filename, content_type, data):
        self.filename, self.content_type, self.data = filename, content_type, data


def success_body(result, description=None):
    body = {"ok": True, "result": result}
    if description:
        body["description"] = description
    return body


def error_body(exc):
    body = {"ok": False, "error_code": exc.code, "description": exc.description}
    if exc.retry_after is not None:
        body["parameters"] = {"retry_after": exc.retry_after}
    return body


def json_response(status, body):
    """The API's answer: HTTP status == error_code; 429 also carries Retry-After."""
    headers = {}
    retry_after = body.get("parameters", {}).get("retry_after")
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return web.Response(status=status, body=dumps(body).encode("utf-8"), headers=headers,
                        content_type="application/json")


def gateway_page(status):
    """What the front proxy answers when the Bot API server behind it is unreachable."""
    title = "{} {}".format(status, GATEWAY_ERRORS[status])
    return ("<html>\r\n<head><title>{0}</title></head>\r\n<body>\r\n<center><h1>{0}</h1>"
            "</center>\r\n<hr><center>nginx/1.18.0</center>\r\n</body>\r\n</html>\r\n"
            ).format(title)


def gateway_response(status):
    return web.Response(status=status, text=gateway_page(status), content_type="text/html")


def truncated_response(body):
    """A 200 whose JSON body stops halfway (its Content-Length matches what is sent)."""
    payload = dumps(body).encode("utf-8")
    half = payload[:len(payload) // 2]
    return web.Response(status=200, body=half, content_type="application/json"), half


async def cut_response(request, body):
    """Send the headers and half of the JSON body, then drop the TCP connection."""
    payload = dumps(body).encode("utf-8") if body is not None else b""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = max(len(payload), 1)
    try:
        await response.prepare(request)
        await response.write(payload[:len(payload) // 2])
        await drop_connection(request)
    except ConnectionError:
        pass  # the client went away first
    return response
