# gateway layer: the WebSocket endpoint the local clients talk to. The names its modules share live here:
# server.py (the listener, at boot) and the parts loaded later (clients, commands, auth) import them from the
# package, never from each other.
from mimi.bus.message import WEBSOCKET

CHANNEL = WEBSOCKET
CLIENTS_MAX = 4
TOKEN_NS = "gw_config"  # where the gateway token is kept (gateway/auth.py makes and checks it)
TOKEN_KEY = "ws_token"
DROPPED = "gateway: reply for {} dropped: no client is connected to that chat (it is saved in the session)"
