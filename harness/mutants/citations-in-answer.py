# loopcheck-mutant
# defect: renders the final message's annotations into the answer as citation markup ("[1] title <url>"), so the answer is no longer the model's text
# caught-by: terminal/outcome
# cases: output/01-annotations
# supports: previous_response_id, stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_final_answer = loop.final_answer


def final_answer(response):
    text = _final_answer(response)
    notes = []
    for item in response.output:
        for part in getattr(item, "content", None) or []:
            for annotation in getattr(part, "annotations", None) or []:
                name = getattr(annotation, "title", None) or getattr(annotation, "filename", "")
                where = getattr(annotation, "url", None) or getattr(annotation, "file_id", "")
                notes.append(f"[{len(notes) + 1}] {name} <{where}>")
    return "\n\n".join([text, *notes]) if notes else text


loop.final_answer = final_answer

loop.main()
