# loopcheck-mutant
# defect: reads a call's arguments from a field Responses function calls do not have (input), so every call runs with {}
# caught-by: call-id/executed-as-issued
# cases: regressions/09-arguments-read-as-empty
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_handle = loop.Tools.handle


def handle(self, call):
    arguments = getattr(call, "input", None) or "{}"
    return _handle(self, call.model_copy(update={"arguments": arguments}))


loop.Tools.handle = handle

loop.main()
