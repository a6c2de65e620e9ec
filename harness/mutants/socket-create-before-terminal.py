# loopcheck-mutant
# defect: over the WebSocket mode, takes a response as done at its function call's response.output_item.done and sends the next response.create at once, while the response is still in flight
# caught-by: websocket/one-in-flight
# cases: websocket/05-create-before-terminal
# supports: previous_response_id,stateless,stream,websocket

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402


def read_answer(self, until):
    """The answer as far as its first finished call: the response announced by
    response.created, with the output items done so far."""
    created, done, started = None, [], False
    while True:
        try:
            message = self.connection._connection.recv(timeout=max(0.0, until - time.monotonic()))
        except (TimeoutError, ConnectionClosed) as err:
            raise self.lost(started, repr(err))
        event = json.loads(message)
        kind = event.get("type")
        if kind == "error":
            raise (None if started else loop.refused_create(event)) or loop.stream_error(event)
        started = True
        if kind == "response.created":
            created = event["response"]
        elif kind == "response.output_item.done":
            done.append(event["item"])
            if event["item"].get("type") == "function_call" and created is not None:
                return loop.validated(json.dumps({**created, "status": "completed", "output": done}))
        if kind in loop.TERMINAL_EVENTS:
            return loop.validated(json.dumps(event["response"]))


loop.SocketSession.read_answer = read_answer
loop.main()
