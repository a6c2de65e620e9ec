# loopcheck-mutant
# defect: dispatches an argument whose value is the string "None" as null, reading the text as Python's None after validation
# caught-by: call-id/executed-as-issued
# cases: dispatch/13-string-none-argument
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_dispatch = loop.Tools.dispatch


def dispatch(self, call, body, name=None):
    arguments = body.get("arguments")
    if isinstance(arguments, dict):
        body = {**body, "arguments": {k: None if v == "None" else v for k, v in arguments.items()}}
    return _dispatch(self, call, body, name)


loop.Tools.dispatch = dispatch

loop.main()
