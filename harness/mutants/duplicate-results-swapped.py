# loopcheck-mutant
# defect: treats identical calls (same name and arguments) as interchangeable and hands their results out in reverse order, so each call gets the other's reservation
# caught-by: call-id/result-matches
# cases: correlation/07-duplicate-calls
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def answer_calls(calls, tools):
    results = {}
    for call in calls:
        results.setdefault((call.name, call.arguments), []).append(tools.handle(call))
    # each identical call takes the last result left for its name and arguments
    return [loop.answer(call, results[(call.name, call.arguments)].pop()) for call in calls]


loop.answer_calls = answer_calls

loop.main()
