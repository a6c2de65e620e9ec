# loopcheck-mutant
# defect: answers a computer call with a function_call_output carrying the screenshot as text
# caught-by: call-id/answer-kind
# cases: computer/01-screenshot-answered
# supports: previous_response_id, stateless, computer

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_computer = loop.Tools.handle_computer


def handle_computer(self, call):
    item = reference_handle_computer(self, call)
    return {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps(item["output"])}


loop.Tools.handle_computer = handle_computer

loop.main()
