# net layer
# What of this package loads late and may be let go (mimi/heap.py), with the scope that uses it: the HTTP client, let
# go with a model call's code where no loaded module keeps it (Telegram, MCP, voice and the fetch tools import it).
LET_GO = "http:call http_send:call connect:call"
