# loopcheck-mutant
# defect: sends the tool result as a JSON object in output, where the API takes a string or an array of content parts
# caught-by: wire/accepted
# cases: correlation/01-single-call
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer = loop.answer


def answer(call, output):
    item = _answer(call, output)
    try:
        item["output"] = loop.json.loads(output)
    except ValueError:
        pass
    return item


loop.answer = answer

loop.main()
