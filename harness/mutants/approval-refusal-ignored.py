# loopcheck-mutant
# defect: treats any answer from the approver as a yes, so a refused call is dispatched anyway
# caught-by: authz/approval-denied
# cases: authz/02-approval-denied
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_ask_approval = loop.Tools.ask_approval


def ask_approval(self, call, body, name):
    approval, _refusal = _ask_approval(self, call, body, name)
    return approval, None


loop.Tools.ask_approval = ask_approval

loop.main()
