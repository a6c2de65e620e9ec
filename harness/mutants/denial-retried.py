# loopcheck-mutant
# defect: retries every failed tool call, a backend 403 denial included
# caught-by: authz/denial-relayed
# cases: authz/01-cross-tenant-denied
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.Tools.retryable = staticmethod(lambda status: status >= 400)

loop.main()
