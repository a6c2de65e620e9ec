# loopcheck-mutant
# defect: answers every call that did not run with the same generic error output, "Function failed.", dropping the backend's message and code
# caught-by: authz/denial-relayed
# cases: authz/01-cross-tenant-denied
# supports: previous_response_id

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def error_output(message):
    return loop.Failure(json.dumps({"error": "Function failed."}))


loop.error_output = error_output

loop.main()
