# loopcheck-mutant
# defect: keys its history by call ids it mints itself (tc_<uuid>) and sends the tool output under that id, not the model's call_id
# caught-by: call-id/own-id
# cases: regressions/03-client-minted-call-id
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

import uuid  # noqa: E402

_answer = loop.answer


def answer(call, output):
    item = _answer(call, output)
    item["call_id"] = f"tc_{uuid.uuid4().hex}"
    return item


loop.answer = answer

loop.main()
