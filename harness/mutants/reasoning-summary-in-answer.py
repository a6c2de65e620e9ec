# loopcheck-mutant
# defect: reports every text of the final turn as the answer, reasoning summaries included
# caught-by: terminal/outcome
# cases: terminal/04-final-answer-after-reasoning
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_final_answer = loop.final_answer


def final_answer(response):
    summaries = [
        part.text
        for item in response.output
        if item.type == "reasoning"
        for part in (item.summary or [])
    ]
    return "\n".join(summaries + [_final_answer(response)])


loop.final_answer = final_answer

loop.main()
