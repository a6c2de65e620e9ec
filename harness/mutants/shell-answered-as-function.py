# loopcheck-mutant
# defect: answers a shell call with a function_call_output, its output chunks and all
# caught-by: call-id/answer-kind
# cases: shell/01-shell-call, shell/06-shell-beside-function
# supports: previous_response_id, stateless, shell

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

loop.ANSWER_TYPES["shell_call"] = "function_call_output"

loop.main()
