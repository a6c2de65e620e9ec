# loopcheck-mutant
# defect: keeps each streamed reasoning item as response.output_item.added announced it, whose encrypted_content may be incomplete, instead of the item of response.output_item.done
# caught-by: reasoning/replayed
# cases: reasoning/04-streamed-reasoning-from-done
# supports: stateless,stream

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
    announced = {}  # output_index -> the reasoning item of its output_item.added event
    with client.responses.stream(**body, extra_body=extra_body) as events:
        for event in events:
            if event.type == "response.output_item.added" and event.item.type == "reasoning":
                announced[event.output_index] = json.loads(event.item.to_json())
            elif event.type in loop.TERMINAL_EVENTS:
                response = json.loads(event.response.to_json())
                for index, item in announced.items():
                    response["output"][index] = {**response["output"][index], **item}
                return loop.validated(json.dumps(response))
            elif event.type == "error":
                raise loop.Stop("api_error", f"stream error {event.code}: {event.message}")
    raise loop.Stop("api_error", "the stream ended before a terminal event")


loop.create = create

loop.main()
