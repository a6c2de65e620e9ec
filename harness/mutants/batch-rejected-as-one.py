# loopcheck-mutant
# defect: validates a turn's calls as one batch, so one call to an unknown tool gets every call of the turn answered with its error and none run
# caught-by: dispatch/valid-executed
# cases: dispatch/08-parallel-one-rejected
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_answer_calls = loop.answer_calls


def answer_calls(calls, tools):
    unknown = [call.name for call in calls if tools.lookup(call.name) is None]
    if unknown:
        output = loop.error_output(f"unknown tool(s) in this turn: {', '.join(unknown)}")
        return [loop.answer(call, output) for call in calls]
    return _answer_calls(calls, tools)


loop.answer_calls = answer_calls

loop.main()
