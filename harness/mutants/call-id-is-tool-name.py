# loopcheck-mutant
# defect: answers a call under its tool name (the Chat Completions habit) instead of its call_id
# caught-by: call-id/own-id
# cases: correlation/01-single-call
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer = loop.answer
loop.answer = lambda call, output: {**_answer(call, output), "call_id": call.name}

loop.main()
