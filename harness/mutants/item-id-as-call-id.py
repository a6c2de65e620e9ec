# loopcheck-mutant
# defect: answers a call with its fc_ item id instead of its call_id
# caught-by: call-id/own-id
# cases: correlation/02-call-id-distinct
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer = loop.answer
loop.answer = lambda call, output: {**_answer(call, output), "call_id": call.id}

loop.main()
