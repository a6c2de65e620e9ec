# loopcheck-mutant
# defect: opens a new WebSocket connection for every model request, closing the last one though it was still usable
# caught-by: websocket/connection-kept
# cases: websocket/01-single-call
# supports: previous_response_id,stateless,stream,websocket

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_model_request = loop.model_request


def model_request(client, socket, kwargs, task):
    response = _model_request(client, socket, kwargs, task)
    if socket is not None:
        socket.close()  # the next create opens a new one
    return response


loop.model_request = model_request
loop.main()
