# loopcheck-mutant
# defect: never asks the approver, so approval-required tools are dispatched without an approval
# caught-by: authz/approval-asked
# cases: authz/03-approval-granted
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.needs_approval = lambda self, name: False

loop.main()
