# loopcheck-equivalent
# form: warms the WebSocket connection up with a generate:false response.create (model, instructions and tools, no input) and continues the warm-up's response in the first real create, as the API's WebSocket guide shows for latency
# cases: websocket/*, reasoning/01-encrypted-retention, budget/01-endless-tool-calls, authz/02-approval-denied, terminal/03-failed-status
# supports: previous_response_id,stateless,stream,websocket,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_model_request = loop.model_request


def model_request(client, socket, kwargs, task):
    if socket is not None and not getattr(socket, "warmed", False):
        socket.warmed = True
        warm = socket.create({**kwargs, "input": [], "generate": False})
        kwargs = {**kwargs, "previous_response_id": warm.id}
    return _model_request(client, socket, kwargs, task)


loop.model_request = model_request
loop.main()
