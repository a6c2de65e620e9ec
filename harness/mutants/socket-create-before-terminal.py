# loopcheck-mutant
# defect: over the WebSocket mode, takes a response as done at its function call's response.output_item.done and sends the next response.create at once, while the response is still in flight
# caught-by: websocket/one-in-flight
# cases: websocket/05-create-before-terminal
# supports: previous_response_id,stateless,stream,websocket

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def read_answer(self, until):
    """The answer as far as its first finished call: the response announced by
    response.created, with the output items done so far."""
    created, done, started = None, [], False
    while True:
        _, event = self.next_event(until, started)
        started = True
        kind = event.get("type")
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
