# loopcheck-mutant
# defect: asks the approver with the call_id and arguments but no tool name; the approver cannot tell what it approves, grants, and the refund runs
# caught-by: authz/approval-request-matches
# cases: authz/02-approval-denied, authz/04-injected-instructions
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def ask_approval(self, call, body, name):
    status, answer = loop.post_json(f"{self.url}/approvals", body)  # body has no "name"
    if status == 200 and isinstance(answer, dict) and answer.get("approved") is True:
        return answer["approval"], None
    reason = (answer or {}).get("reason") if isinstance(answer, dict) else None
    return None, loop.error_output(f"approval denied: {reason or status}")


loop.Tools.ask_approval = ask_approval

loop.main()
