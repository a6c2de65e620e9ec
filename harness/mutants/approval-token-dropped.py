# loopcheck-mutant
# defect: asks the approver but dispatches the call without the approval token it was granted
# caught-by: authz/approval-before-execution
# cases: authz/03-approval-granted
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_ask_approval = loop.Tools.ask_approval


def ask_approval(self, call, body, name):
    _approval, refusal = _ask_approval(self, call, body, name)
    return None, refusal  # it keeps "approved or not", not the token


loop.Tools.ask_approval = ask_approval

loop.main()
