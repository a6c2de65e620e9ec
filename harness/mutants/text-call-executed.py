# loopcheck-mutant
# defect: parses function calls written as JSON in the final message's text ({"name": ..., "arguments": ...}) and executes them, though the model issued no function_call
# caught-by: effects/at-most-once
# cases: terminal/11-call-written-as-text
# supports: previous_response_id,stateless

import json
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_tools_init = loop.Tools.__init__
_final_answer = loop.final_answer
backend = []


def tools_init(self, *args, **kwargs):
    _tools_init(self, *args, **kwargs)
    backend.append(self)


def calls_in_text(text):
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict) and "name" in value and isinstance(value.get("arguments"), dict):
            yield value
        start = text.find("{", end)


def final_answer(response):
    text = _final_answer(response)
    for index, found in enumerate(calls_in_text(text)):
        call = types.SimpleNamespace(
            name=found["name"],
            arguments=json.dumps(found["arguments"]),
            call_id=f"call_text_{index}",
            caller=None,
        )
        loop.log(f"  text call {call.name} -> {backend[-1].handle(call)}")
    return text


loop.Tools.__init__ = tools_init
loop.final_answer = final_answer

loop.main()
