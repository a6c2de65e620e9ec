# loopcheck-mutant
# defect: asks the approver about an MCP approval request but answers approve true whatever it decided
# caught-by: mcp/approval-decision
# cases: mcp/02-approval-refused, mcp/03-two-approvals-one-refused
# supports: previous_response_id,mcp

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_decide = loop.Tools.decide


def decide(self, request):
    decision = _decide(self, request)
    decision.pop("reason", None)
    return {**decision, "approve": True}


loop.Tools.decide = decide

loop.main()
