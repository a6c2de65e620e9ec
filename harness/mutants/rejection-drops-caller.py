# loopcheck-mutant
# defect: answers a rejected call without its caller, so a program's invalid child call gets an output the program never receives
# caught-by: program/caller-echoed
# cases: program/06-child-invalid-arguments
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer = loop.answer


def answer(call, output):
    item = _answer(call, output)
    if output.startswith('{"error"'):
        item.pop("caller", None)
    return item


loop.answer = answer

loop.main()
