# loopcheck-mutant
# defect: reads only the first function_call of a response, leaving its parallel siblings unanswered
# caught-by: call-id/answered
# cases: correlation/04-parallel-different-tools
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_pending_calls = loop.pending_calls
loop.pending_calls = lambda response: _pending_calls(response)[:1]

loop.main()
