# loopcheck-mutant
# defect: accumulates streamed text and, when the stream breaks (error event, cut connection), reports what arrived as the answer
# caught-by: stream/broken-not-answer
# cases: stream/04-error-event-flat, stream/02-cut-before-terminal
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_create = loop.create


def partial(response_id, text):
    """A completed response holding the text received so far."""
    message = {"type": "message", "id": "msg_partial", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return loop.Response.model_construct(
        id=response_id, object="response", status="completed",
        output=[loop.openai.types.responses.ResponseOutputMessage.model_validate(message)],
    )


def create(client, kwargs, stream):
    if not stream:
        return _create(client, kwargs, stream)
    kwargs = dict(kwargs)
    extra_body = {"tools": kwargs.pop("tools")}
    response_id, text = "resp_partial", []
    try:
        with client.responses.stream(**kwargs, extra_body=extra_body) as events:
            for event in events:
                if event.type in loop.TERMINAL_EVENTS:
                    return loop.validated(event.response.to_json())
                if event.type == "response.created":
                    response_id = event.response.id
                if event.type == "response.output_text.delta":
                    text.append(event.delta)
    except Exception as err:  # noqa: BLE001
        loop.log(f"the stream broke ({err!r}); keeping the text that arrived")
    return partial(response_id, "".join(text))


loop.create = create

loop.main()
