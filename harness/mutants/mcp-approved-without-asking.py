# loopcheck-mutant
# defect: answers every MCP approval request with approve true without asking the approver
# caught-by: mcp/approval-asked
# cases: mcp/01-approval-granted, mcp/02-approval-refused
# supports: previous_response_id,mcp

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def decide(self, request):
    return {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}


loop.Tools.decide = decide

loop.main()
