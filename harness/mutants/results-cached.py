# loopcheck-mutant
# defect: caches tool outputs by tool name and arguments, so a repeated call is answered from the cache and never reaches the backend again
# caught-by: dispatch/valid-executed
# cases: authz/08-permission-revoked
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_handle = loop.Tools.handle
CACHE = {}


def handle(self, call):
    key = (call.name, call.arguments)
    if key not in CACHE:
        CACHE[key] = _handle(self, call)
    return CACHE[key]


loop.Tools.handle = handle

loop.main()
