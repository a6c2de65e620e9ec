# loopcheck-mutant
# defect: reports a refusal as failed with reason refusal but a canned detail, dropping the model's refusal text, so the user never learns why there is no answer
# caught-by: terminal/refusal-text
# cases: terminal/09-refusal
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_final_answer = loop.final_answer


def final_answer(response):
    try:
        return _final_answer(response)
    except loop.Stop as stop:
        if stop.reason == "refusal":
            raise loop.Stop("refusal", "the model declined to answer") from None
        raise


loop.final_answer = final_answer

loop.main()
