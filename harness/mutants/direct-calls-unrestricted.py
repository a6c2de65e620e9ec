# loopcheck-mutant
# defect: reads allowed_callers as a limit on programs only, so the model may call directly a tool only programs may call
# caught-by: dispatch/caller-allowed
# cases: program/08-programmatic-only-called-directly
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402



def caller_allowed(call, allowed_callers):
    from_program = call.caller is not None and call.caller.type == "program"
    return not from_program or "programmatic" in allowed_callers


loop.Tools.caller_allowed = staticmethod(caller_allowed)

loop.main()
