# loopcheck-mutant
# defect: pairs results with calls by position, in reverse order, so parallel calls swap results
# caught-by: call-id/result-matches
# cases: correlation/05-parallel-same-tool
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer_calls = loop.answer_calls


def answer_calls(calls, tools):
    outputs = _answer_calls(calls, tools)
    texts = [item["output"] for item in outputs][::-1]
    return [{**item, "output": text} for item, text in zip(outputs, texts)]


loop.answer_calls = answer_calls

loop.main()
