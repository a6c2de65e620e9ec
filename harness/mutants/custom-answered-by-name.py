# loopcheck-mutant
# defect: answers a custom tool call under the tool's name instead of its call_id
# caught-by: call-id/own-id
# cases: custom/01-custom-call
# supports: previous_response_id, custom

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_answer = loop.answer


def answer(call, output):
    item = reference_answer(call, output)
    if call.type == "custom_tool_call":
        item["call_id"] = call.name
    return item


loop.answer = answer

loop.main()
