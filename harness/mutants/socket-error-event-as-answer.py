# loopcheck-mutant
# defect: over the WebSocket mode, when a response breaks off with an error event, reports the text that had arrived as the answer
# caught-by: stream/broken-not-answer
# cases: websocket/06-error-event-mid-turn
# supports: previous_response_id,stateless,stream,websocket

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402


class PartialAnswer(Exception):
    """A broken answer's text, taken for the answer."""


def read_answer(self, until):
    """The answer, read to its terminal event; an error event mid-answer ends it with the
    text streamed so far."""
    text, started = "", False
    while True:
        try:
            message = self.connection._connection.recv(timeout=max(0.0, until - time.monotonic()))
        except (TimeoutError, ConnectionClosed) as err:
            raise self.lost(started, repr(err))
        event = json.loads(message)
        kind = event.get("type")
        if kind == "error":
            if started:
                raise PartialAnswer(text)
            raise loop.refused_create(event) or loop.stream_error(event)
        started = True
        if kind == "response.output_text.delta":
            text += event.get("delta", "")
        if kind in loop.TERMINAL_EVENTS:
            return loop.validated(json.dumps(event["response"]))


_run = loop.run


def run(task, client, tools):
    try:
        return _run(task, client, tools)
    except PartialAnswer as partial:
        return str(partial)


loop.SocketSession.read_answer, loop.run = read_answer, run
loop.main()
