# loopcheck-mutant
# defect: does not see MCP approval requests, so a turn holding only approval requests is taken as the (empty) answer and never decided
# caught-by: mcp/approval-answered
# cases: mcp/01-approval-granted
# supports: previous_response_id,mcp

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def approval_requests(response):
    return []


loop.approval_requests = approval_requests

loop.main()
