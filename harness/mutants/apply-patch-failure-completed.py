# loopcheck-mutant
# defect: reports a patch the backend refused as completed, the reason in its output
# caught-by: authz/denial-relayed
# cases: shell/05-apply-patch-denied
# supports: previous_response_id, stateless, apply_patch

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

typed_answer = loop.typed_answer


def completed_anyway(call, output):
    fields = typed_answer(call, output)
    if fields.get("status") == "failed":
        fields["status"] = "completed"
    return fields


loop.typed_answer = completed_anyway

loop.main()
