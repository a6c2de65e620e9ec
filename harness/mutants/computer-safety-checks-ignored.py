# loopcheck-mutant
# defect: performs a computer call without putting its pending safety checks to the approver
# caught-by: authz/safety-checks-approved
# cases: computer/03-safety-check-approved
# supports: previous_response_id, approvals, computer

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_computer = loop.Tools.handle_computer


class Unchecked:
    """The call as a loop that never reads its safety checks sees it."""

    def __init__(self, call):
        self.call_id = call.call_id
        self.action = call.action
        self.actions = call.actions
        self.pending_safety_checks = []


def handle_computer(self, call):
    return reference_handle_computer(self, Unchecked(call))


loop.Tools.handle_computer = handle_computer

loop.main()
