# loopcheck-mutant
# defect: leaves rejected calls out of the next request instead of answering them with an error output
# caught-by: dispatch/rejection-answered
# cases: dispatch/01-unknown-tool
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer_calls = loop.answer_calls


def answer_calls(calls, tools):
    return [item for item in _answer_calls(calls, tools) if '"error"' not in item["output"]]


loop.answer_calls = answer_calls

loop.main()
