# loopcheck-mutant
# defect: takes a stream that ended without a terminal event for a stored response and resumes by chaining a new request to its id, as if it had completed
# caught-by: terminal/stopped-at-answer
# cases: stream/02-cut-before-terminal
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_create = loop.create


def create(client, kwargs, stream):
    if not stream:
        return _create(client, kwargs, stream)
    created = None
    body = dict(kwargs)
    extra_body = {"tools": body.pop("tools")}
    with client.responses.stream(**body, extra_body=extra_body) as events:
        try:
            for event in events:
                if event.type == "response.created":
                    created = event.response.id
                if event.type in loop.TERMINAL_EVENTS:
                    return loop.validated(event.response.to_json())
        except Exception:  # noqa: BLE001 - the cut connection
            pass
    if created is None:
        raise loop.Stop("api_error", "the stream ended before it started")
    # The cut response is taken as stored and complete: carry on from it.
    return _create(client, {**kwargs, "previous_response_id": created, "input": "Please continue."}, stream)


loop.create = create

loop.main()
