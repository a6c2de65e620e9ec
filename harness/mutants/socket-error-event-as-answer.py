# loopcheck-mutant
# defect: over the WebSocket mode, when a response breaks off with an error event, reports the text that had arrived as the answer
# caught-by: stream/broken-not-answer
# cases: websocket/06-error-event-mid-turn
# supports: previous_response_id,stateless,stream,websocket

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


class PartialAnswer(Exception):
    """A broken answer's text, taken for the answer."""


def read_answer(self, until):
    """The answer, read to its terminal event; an error event mid-answer ends it with the
    text streamed so far."""
    text, started = "", False
    while True:
        try:
            _, event = self.next_event(until, started)
        except loop.Stop as stop:
            if started and stop.detail.startswith("stream error"):
                raise PartialAnswer(text)
            raise
        started = True
        if event.get("type") == "response.output_text.delta":
            text += event.get("delta", "")
        if event.get("type") in loop.TERMINAL_EVENTS:
            return loop.validated(json.dumps(event["response"]))


_run = loop.run


def run(task, client, tools):
    try:
        return _run(task, client, tools)
    except PartialAnswer as partial:
        return str(partial)


loop.SocketSession.read_answer, loop.run = read_answer, run
loop.main()
