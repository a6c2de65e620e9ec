# loopcheck-mutant
# defect: assembles streamed calls from their argument deltas, appending each delta to the call opened last instead of the item the delta names
# caught-by: dispatch/valid-executed
# cases: regressions/10-interleaved-argument-deltas
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

import json  # noqa: E402

_create = loop.create


def create(client, kwargs, stream):
    if not stream:
        return _create(client, kwargs, stream)
    body = dict(kwargs)
    extra_body = {"tools": body.pop("tools")}
    arguments = []  # one accumulator per call, in the order the calls were opened
    with client.responses.stream(**body, extra_body=extra_body) as events:
        for event in events:
            if event.type == "response.output_item.added" and event.item.type == "function_call":
                arguments.append("")
            elif event.type == "response.function_call_arguments.delta":
                arguments[-1] += event.delta
            elif event.type in loop.TERMINAL_EVENTS:
                response = json.loads(event.response.to_json())
                calls = [item for item in response["output"] if item["type"] == "function_call"]
                for call, assembled in zip(calls, arguments):
                    call["arguments"] = assembled
                return loop.validated(json.dumps(response))
    raise loop.Stop("api_error", "the stream ended before a terminal event")


loop.create = create

loop.main()
