# loopcheck-mutant
# defect: sends the outputs of calls that need no approval at once, in a request of their own, and the approved calls' outputs in a later request
# caught-by: call-id/answered
# cases: regressions/08-outputs-split-across-requests
# supports: previous_response_id,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_answer_calls = loop.answer_calls


def answer_calls(calls, tools):
    # The plain calls go out first; the gated ones are answered "when they clear".
    plain = [call for call in calls if not tools.needs_approval(call.name)]
    if plain and len(plain) < len(calls):
        return _answer_calls(plain, tools)
    return _answer_calls(calls, tools)


loop.answer_calls = answer_calls

loop.main()
