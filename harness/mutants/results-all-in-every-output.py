# loopcheck-mutant
# defect: answers every call of a round with one object holding all of the round's results, keyed by call_id, so no output says which result is its own
# caught-by: call-id/result-matches
# cases: correlation/05-parallel-same-tool
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


import json  # noqa: E402

_answer_calls = loop.answer_calls


def answer_calls(calls, tools):
    outputs = _answer_calls(calls, tools)
    everything = json.dumps({item["call_id"]: json.loads(item["output"]) for item in outputs})
    return [{**item, "output": everything} for item in outputs]


loop.answer_calls = answer_calls

loop.main()
