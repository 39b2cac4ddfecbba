# The MCP server's JSON-RPC messages: a request body read into one checked message, results and errors (their
# codes: JSON-RPC 2.0's and MCP's own) written as the HTTP responses that carry them (mcp/server.py uses these).
import json

from microdot import Response

from mimi import jsontext
from mimi.platform import const, log
from mimi.utf8 import strict

_PARSE_ERROR = const(-32700)
INVALID_REQUEST = const(-32600)
METHOD_NOT_FOUND = const(-32601)
INVALID_PARAMS = const(-32602)
INTERNAL_ERROR = const(-32603)
RESOURCE_NOT_FOUND = const(-32002)
HEADER_MISMATCH = const(-32020)  # 2026-07-28: an MCP-Protocol-Version, Mcp-Method or Mcp-Name header disagrees
UNSUPPORTED_VERSION = const(-32022)  # 2026-07-28: the envelope's protocol version is not served
JSON_TYPE = "application/json"
_METHOD_SHOWN_MAX = const(64)


class RpcError(Exception):
    """A request answered with a JSON-RPC error: code, message (said to the client) and data; a request refused
    before any method runs (refused()) also has its HTTP status and the request's id."""

    status = rid = None

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def refused(status, code, message, rid=None, data=None):
    error = RpcError(code, message, data)
    error.status, error.rid = status, rid
    return error


def parsed(body):
    """The JSON-RPC message of a body; RpcError (a parse error) unless strict UTF-8 holding one JSON value."""
    try:
        return jsontext.loads(strict(body))
    except ValueError:  # not UTF-8, not JSON (a huge number too)
        reason = "Parse error: the body is not JSON in UTF-8"
    except RuntimeError:  # CPython: nested too deeply (RecursionError)
        reason = "Parse error: the body is nested too deeply"
    except MemoryError:  # MicroPython: nested too deeply for the heap
        reason = "Parse error: the board has not the memory to read this body"
    raise refused(400, _PARSE_ERROR, reason)


def checked(message):
    """(id or None, method, params) of a JSON-RPC request or notification; a response of the client is
    (None, None, {}); RpcError says what else is wrong."""
    if not isinstance(message, dict):
        raise refused(400, INVALID_REQUEST, "the body must be one JSON-RPC message object (no batches)")
    rid = message.get("id")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
        raise refused(400, INVALID_REQUEST, "id must be a string or an integer")
    if message.get("jsonrpc") != "2.0":
        raise refused(400, INVALID_REQUEST, 'jsonrpc must be "2.0"', rid)
    method, params = message.get("method"), message.get("params", {})
    if method is None and ("result" in message or "error" in message) and rid is not None:
        return None, None, {}  # the answer to a request of the server's: it sends none, so nothing to do
    if not isinstance(method, str):
        raise refused(400, INVALID_REQUEST, "a request needs a method (a string)", rid)
    if "id" not in message and not method.startswith("notifications/"):
        raise refused(400, INVALID_REQUEST, "{} is a request: it needs an id".format(method[:_METHOD_SHOWN_MAX]))
    if rid is None and "id" in message:
        raise refused(400, INVALID_REQUEST, "id must not be null")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise refused(400, INVALID_PARAMS, "params must be an object", rid)
    return rid, method, params


def result(rid, answer, headers=None):
    """A JSON-RPC result: a dict, or (length, pieces) of its JSON written a piece at a time; without a length
    (None) the body ends with the connection, as HTTP/1.0 allows (the gateway closes it after each answer)."""
    head = '{"jsonrpc": "2.0", "id": ' + json.dumps(rid) + ', "result": '
    extra = {"Content-Type": JSON_TYPE}
    extra.update(headers or {})
    if isinstance(answer, dict):
        return Response((head + json.dumps(answer) + "}").encode(), 200, extra)
    length, pieces = answer
    head = head.encode()
    if length is not None:
        extra["Content-Length"] = str(len(head) + length + 1)
    return Response(_chain(head, pieces), 200, extra)


def _chain(head, pieces):
    yield head
    try:
        for piece in pieces:
            yield piece
    except Exception as exc:  # a bug: the body ends short (the client sees it broken), the connection closes
        log("mcp: an answer broke off: {}: {}".format(type(exc).__name__, exc))
        return
    yield b"}"


def error(rid, code, message, status, headers=None, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    extra = {"Content-Type": JSON_TYPE}
    extra.update(headers or {})
    return Response(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}).encode(), status, extra)
