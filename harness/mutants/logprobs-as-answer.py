# loopcheck-mutant
# defect: builds the answer from the final message's logprobs tokens, each stripped and joined with spaces, so the text's line breaks and list marks are lost
# caught-by: terminal/outcome
# cases: output/07-logprobs
# supports: previous_response_id, stateless, stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_final_answer = loop.final_answer


def final_answer(response):
    text = _final_answer(response)
    tokens = [
        logprob.token.strip()
        for item in response.output
        if item.type == "message"
        for part in item.content
        if part.type == "output_text"
        for logprob in (part.logprobs or [])
    ]
    return " ".join(tokens) if tokens else text


loop.final_answer = final_answer

loop.main()
