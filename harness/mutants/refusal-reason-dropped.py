# loopcheck-mutant
# defect: answers a call the approver refused with "rejected by user", leaving out the reason the approver gave
# caught-by: authz/approval-denied
# cases: authz/02-approval-denied
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_ask_approval = loop.Tools.ask_approval


def ask_approval(self, call, body, name):
    token, output = _ask_approval(self, call, body, name)
    if token is None:
        return None, loop.error_output("rejected by user")
    return token, output


loop.Tools.ask_approval = ask_approval

loop.main()
