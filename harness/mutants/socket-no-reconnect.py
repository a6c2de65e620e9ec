# loopcheck-mutant
# defect: takes the server closing its WebSocket connection (1001, the time limit) for a failure and gives up instead of opening a new connection
# caught-by: websocket/reconnects
# cases: websocket/03-reconnect-stateless, websocket/04-reconnect-chained
# supports: previous_response_id,stateless,stream,websocket

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_connect = loop.SocketSession.connect


def connect(self, limit):
    if getattr(self, "opened", False):
        raise loop.Stop("api_error", "the server closed the connection")
    self.opened = True
    return _connect(self, limit)


loop.SocketSession.connect = connect
loop.main()
