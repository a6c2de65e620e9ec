# loopcheck-mutant
# defect: asks the approver only about direct calls: a program's call to an approval-required tool is dispatched without an approval
# caught-by: authz/approval-asked
# cases: program/07-child-approval
# supports: previous_response_id,programmatic,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_handle = loop.Tools.handle


def handle(self, call):
    from_program = call.caller is not None and call.caller.type == "program"
    saved = self.approval_required
    if from_program:
        self.approval_required = set()
    try:
        return _handle(self, call)
    finally:
        self.approval_required = saved


loop.Tools.handle = handle

loop.main()
