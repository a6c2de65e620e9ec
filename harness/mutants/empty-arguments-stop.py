# loopcheck-mutant
# defect: takes a call whose arguments are the empty string for a broken response and stops the run instead of answering the call
# caught-by: dispatch/rejection-answered
# cases: regressions/07-empty-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_handle = loop.Tools.handle


def handle(self, call):
    if call.arguments == "":
        raise loop.Stop("api_error", "Unexpected end of JSON input")
    return _handle(self, call)


loop.Tools.handle = handle

loop.main()
