# gateway layer: the WebSocket endpoint the local clients talk to
