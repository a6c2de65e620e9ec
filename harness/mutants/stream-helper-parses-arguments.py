# loopcheck-mutant
# defect: passes tools= to the SDK stream helper, which json.loads strict calls' arguments and aborts the whole loop on a malformed call
# caught-by: dispatch/rejection-answered
# cases: dispatch/03-malformed-arguments-streamed
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_create = loop.create


def create(client, kwargs, stream):
    if not stream:
        return _create(client, kwargs, stream)
    with client.responses.stream(**kwargs) as events:
        for event in events:
            if event.type in loop.TERMINAL_EVENTS:
                return loop.validated(event.response.to_json())
            if event.type == "error":
                raise loop.Stop("api_error", f"stream error {event.code}: {event.message}")
    raise loop.Stop("api_error", "the stream ended before a terminal event")


loop.create = create

loop.main()
