# loopcheck-mutant
# defect: keeps results in a dict keyed by tool name, so parallel calls to one tool all get the last result
# caught-by: call-id/result-matches
# cases: correlation/05-parallel-same-tool
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def answer_calls(calls, tools):
    results = {call.name: tools.handle(call) for call in calls}
    return [loop.answer(call, results[call.name]) for call in calls]


loop.answer_calls = answer_calls

loop.main()
