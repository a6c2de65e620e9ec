# loopcheck-mutant
# defect: runs a namespaced function call on the backend by its bare name, without the call's namespace
# caught-by: call-id/executed-as-issued
# cases: tools/01-namespaced-call
# supports: previous_response_id, namespaces

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

loop.with_namespace = lambda call, body: body

loop.main()
