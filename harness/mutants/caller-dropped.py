# loopcheck-mutant
# defect: answers a program child call without echoing its caller
# caught-by: program/caller-echoed
# cases: program/01-one-pause
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_answer = loop.answer


def answer(call, output):
    item = _answer(call, output)
    item.pop("caller", None)
    return item


loop.answer = answer

loop.main()
