# loopcheck-mutant
# defect: warms the WebSocket connection up with a generate:false response.create and reads the warm-up's empty response as the model's first turn
# caught-by: websocket/warm-up-not-a-turn
# cases: websocket/07-warm-up
# supports: previous_response_id,stateless,stream,websocket

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_model_request = loop.model_request


def model_request(client, socket, kwargs, task):
    if socket is not None and not getattr(socket, "warmed", False):
        socket.warmed = True
        return socket.create({**kwargs, "generate": False})
    return _model_request(client, socket, kwargs, task)


loop.model_request = model_request
loop.main()
