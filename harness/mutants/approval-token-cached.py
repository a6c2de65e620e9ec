# loopcheck-mutant
# defect: asks the approver once per tool name and reuses that approval token for every later call to the tool
# caught-by: authz/approval-before-execution
# cases: authz/06-two-approvals
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_ask_approval = loop.Tools.ask_approval
_granted = {}  # tool name -> token


def ask_approval(self, call, body, name):
    if name in _granted:
        return _granted[name], None
    approval, refusal = _ask_approval(self, call, body, name)
    if refusal is None:
        _granted[name] = approval
    return approval, refusal


loop.Tools.ask_approval = ask_approval

loop.main()
