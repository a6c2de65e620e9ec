# loopcheck-mutant
# defect: answers a call the backend denied (403) with the missing result, "null", as if it had succeeded with nothing
# caught-by: authz/denial-relayed
# cases: authz/01-cross-tenant-denied
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.output_for = staticmethod(
    lambda status, answer: loop.json.dumps((answer or {}).get("result"))
)

loop.main()
