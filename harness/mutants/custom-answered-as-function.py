# loopcheck-mutant
# defect: answers every call with a function_call_output, a custom tool call too
# caught-by: call-id/answer-kind
# cases: custom/01-custom-call, custom/02-custom-beside-function
# supports: previous_response_id, stateless, custom
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

loop.ANSWER_TYPES["custom_tool_call"] = "function_call_output"

loop.main()
