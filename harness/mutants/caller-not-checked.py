# loopcheck-mutant
# defect: ignores allowed_callers, so a program may call a tool only the model may call
# caught-by: dispatch/caller-allowed
# cases: program/03-caller-not-allowed
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.caller_allowed = staticmethod(lambda call, allowed_callers: True)

loop.main()
