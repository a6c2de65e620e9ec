# loopcheck-mutant
# defect: reports the final turn's reasoning text (reasoning_text content) before the message as the answer
# caught-by: terminal/outcome
# cases: output/02-reasoning-text
# supports: previous_response_id, stream
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_final_answer = loop.final_answer


def final_answer(response):
    thoughts = [
        part.text
        for item in response.output
        if item.type == "reasoning"
        for part in (item.content or [])
    ]
    return "\n".join(thoughts + [_final_answer(response)])


loop.final_answer = final_answer

loop.main()
