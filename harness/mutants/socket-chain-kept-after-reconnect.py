# loopcheck-mutant
# defect: a stateless loop over the WebSocket mode that continues each store:false response by previous_response_id on the connection's cache, and keeps doing so after the server closed the connection, chaining to a response only the lost connection held
# caught-by: websocket/cached-chain
# cases: websocket/03-reconnect-stateless, websocket/08-dropped-mid-chain
# supports: stateless,stream,websocket

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_next_input, _next_config, _uses_socket = loop.next_input, loop.next_config, loop.uses_socket
on_socket = False


def uses_socket(task):
    global on_socket
    on_socket = _uses_socket(task)
    return on_socket


# Only the new items, chained by id: right on the connection that made the response, and
# kept up after a reconnect, where the new connection has no such response.
def next_input(state, sent, response, outputs):
    if on_socket and state == "stateless":
        return outputs
    return _next_input(state, sent, response, outputs)


def next_config(config, response, state):
    if on_socket and state == "stateless":
        return {**config, "previous_response_id": response.id}
    return _next_config(config, response, state)


loop.uses_socket, loop.next_input, loop.next_config = uses_socket, next_input, next_config
loop.main()
