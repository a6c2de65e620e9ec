# loopcheck-mutant
# defect: answers a program's child call that the backend refused with a null result, so that the program's await never throws; a 403 denial reaches the program as an empty success
# caught-by: authz/denial-relayed
# cases: program/11-child-call-denied
# supports: previous_response_id,stateless,programmatic

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_handle = loop.Tools.handle


def handle(self, call):
    output = _handle(self, call)
    from_program = call.caller is not None and call.caller.type == "program"
    if from_program and "error" in json.loads(output):
        return json.dumps(None)
    return output


loop.Tools.handle = handle

loop.main()
