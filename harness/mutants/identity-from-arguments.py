# loopcheck-mutant
# defect: runs a tool for the user its arguments name (user_id) instead of the task's principal, so the model picks whose data it reads
# caught-by: authz/principal-forwarded
# cases: authz/07-identity-from-arguments
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_execute = loop.Tools.execute


def execute(self, call, body, name):
    user = body["arguments"].get("user_id")
    if isinstance(user, str):
        body = {**body, "principal": user}
    return _execute(self, call, body, name)


loop.Tools.execute = execute

loop.main()
