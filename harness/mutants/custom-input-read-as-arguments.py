# loopcheck-mutant
# defect: runs a custom tool call with the call's `arguments`, which a custom_tool_call does not have, so the tool gets an empty input
# caught-by: call-id/executed-as-issued
# cases: custom/01-custom-call
# supports: previous_response_id, custom

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_dispatch = loop.Tools.dispatch


def dispatch(self, call, body):
    if "input" in body:
        body = {**body, "input": getattr(call, "arguments", None) or ""}
    return reference_dispatch(self, call, body)


loop.Tools.dispatch = dispatch

loop.main()
