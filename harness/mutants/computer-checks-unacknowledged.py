# loopcheck-mutant
# defect: answers an approved computer call without acknowledging its safety checks
# caught-by: authz/safety-checks-acknowledged
# cases: computer/03-safety-check-approved
# supports: previous_response_id, stateless, approvals, computer

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_computer = loop.Tools.handle_computer


def handle_computer(self, call):
    item = reference_handle_computer(self, call)
    item.pop("acknowledged_safety_checks", None)
    return item


loop.Tools.handle_computer = handle_computer

loop.main()
