# loopcheck-mutant
# defect: answers rejected calls with an empty output, which tells the model nothing went wrong
# caught-by: dispatch/rejection-answered
# cases: dispatch/01-unknown-tool
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.error_output = lambda message: ""

loop.main()
