# loopcheck-equivalent
# form: answers each call with its result wrapped in a one-level envelope, {"result": <the backend's result>}
# cases: correlation/*, authz/03-approval-granted, effects/*
# supports: previous_response_id,stateless,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


import json  # noqa: E402

_output_for = loop.Tools.output_for


def output_for(status, answer):
    output = _output_for(status, answer)
    return json.dumps({"result": json.loads(output)}) if status == 200 else output


loop.Tools.output_for = staticmethod(output_for)

loop.main()
