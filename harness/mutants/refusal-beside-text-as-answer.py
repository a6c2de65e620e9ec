# loopcheck-mutant
# defect: takes a message's output_text parts as the answer and reads a refusal only when no text is beside it (what the SDKs' output_text invites), so a refusal with text beside it is reported as a completed answer
# caught-by: terminal/outcome
# cases: terminal/12-refusal-beside-text
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def final_answer(response):
    messages = [item for item in response.output if item.type == "message"]
    parts = messages[-1].content if messages else []
    if not any(part.type == "output_text" for part in parts):
        refusal = next((part for part in parts if part.type == "refusal"), None)
        if refusal is not None:
            raise loop.Stop("refusal", refusal.refusal)
    return response.output_text


loop.final_answer = final_answer

loop.main()
