# loopcheck-mutant
# defect: declares the WebSocket mode but sends every model request over HTTP (streamed), whatever the task asks
# caught-by: websocket/over-the-socket
# cases: websocket/01-single-call, websocket/02-parallel-calls
# supports: previous_response_id,stateless,stream,websocket

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

# The task's `websocket` field is ignored: every request streams over HTTP, as a loop that
# was moved to the WebSocket mode only on paper would.
loop.uses_socket = lambda task: False
loop.main()
