# Echo server on the gateway's RFC 6455 WebSocket layer for Autobahn; micropython and python3 alike.
#   gateway_echo.py PORT [MAX_MESSAGE_LENGTH]      (from the repository root or anywhere)
import os
import sys

# Autobahn's framing cases (1.*) echo messages of 65536 bytes: the default cap would refuse them.
ECHO_MAX_MESSAGE = 65536


def _repo_root():
    script = sys.argv[0] if sys.argv and sys.argv[0] else "tests/gateway_echo.py"
    root = "/".join(script.replace("\\", "/").split("/")[:-2])
    return root or "."


def _venv_site_packages(root):
    lib = root + "/.venv/lib"
    try:
        names = os.listdir(lib)
    except OSError:
        return None
    for name in names:
        if name.startswith("python3"):
            return lib + "/" + name + "/site-packages"
    return None


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: gateway_echo.py PORT [MAX_MESSAGE_LENGTH]")
        sys.exit(2)
    root = _repo_root()
    sys.path.insert(0, root + "/firmware")
    sys.path.insert(0, root + "/host_sim/standins")
    site = _venv_site_packages(root)
    if site:
        sys.path.append(site)

    from microdot import Microdot

    from mimi.gateway.websocket import WebSocket, with_websocket

    WebSocket.max_message_length = int(sys.argv[2]) if len(sys.argv) == 3 else ECHO_MAX_MESSAGE
    app = Microdot()

    @app.route("/")
    @with_websocket
    async def echo(request, ws):
        while True:
            await ws.send(await ws.receive())

    port = int(sys.argv[1])
    print("gateway echo listening on ws://127.0.0.1:{}/".format(port))
    app.run(host="127.0.0.1", port=port)


main()
