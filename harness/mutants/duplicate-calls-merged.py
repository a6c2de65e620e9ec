# loopcheck-mutant
# defect: runs identical calls (same name and arguments) once and answers every one of their call_ids with that single result, so two bookings asked for become one
# caught-by: call-id/result-matches
# cases: correlation/07-duplicate-calls
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def answer_calls(calls, tools):
    seen = {}
    outputs = []
    for call in calls:
        key = (call.name, call.arguments)
        if key not in seen:
            seen[key] = tools.handle(call)
        outputs.append(loop.answer(call, seen[key]))
    return outputs


loop.answer_calls = answer_calls

loop.main()
