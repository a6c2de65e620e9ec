# loopcheck-mutant
# defect: sends str(result), a Python repr with single quotes, instead of the JSON-encoded result
# caught-by: call-id/result-matches
# cases: correlation/01-single-call
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_output_for = loop.Tools.output_for


def output_for(status, answer):
    if status == 200 and isinstance(answer, dict) and "result" in answer:
        return str(answer["result"])
    return _output_for(status, answer)


loop.Tools.output_for = staticmethod(output_for)

loop.main()
