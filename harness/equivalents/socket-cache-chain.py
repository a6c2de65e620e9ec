# loopcheck-equivalent
# form: a stateless loop (store:false) over the WebSocket mode that continues each response by previous_response_id on the same connection with only the new items, the connection's cache holding the rest, and sends the whole context again on a new connection, as the API's WebSocket guide recommends
# cases: websocket/*, reasoning/01-encrypted-retention, budget/01-endless-tool-calls, authz/02-approval-denied, terminal/03-failed-status
# supports: previous_response_id,stateless,stream,websocket,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_run, _next_input, _next_config = loop.run, loop.next_input, loop.next_config
_attempt = loop.SocketSession.attempt
# The case run's whole context so far, and whether it runs over the socket.
context, on_socket = None, False


def run(task, client, tools):
    global context, on_socket
    context, on_socket = None, loop.uses_socket(task)
    return _run(task, client, tools)


def next_input(state, sent, response, outputs):
    global context
    if not (on_socket and state == "stateless"):
        return _next_input(state, sent, response, outputs)
    context = _next_input(state, sent if context is None else context, response, outputs)
    return outputs


def next_config(config, response, state):
    if on_socket and state == "stateless":
        return {**config, "previous_response_id": response.id}
    return _next_config(config, response, state)


def attempt(self, event):
    # A new connection holds none of the old one's store:false responses: the chain
    # starts again from the whole context.
    self.discard_if_closed()
    if self.connection is None and "previous_response_id" in event and context is not None:
        event = {key: value for key, value in event.items() if key != "previous_response_id"}
        event["input"] = context
    return _attempt(self, event)


loop.run, loop.next_input, loop.next_config = run, next_input, next_config
loop.SocketSession.attempt = attempt
loop.main()
