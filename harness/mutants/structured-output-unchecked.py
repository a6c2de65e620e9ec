# loopcheck-mutant
# defect: sends text.format but reports the final message as the answer without parsing it or checking it against the schema
# caught-by: terminal/structured-output
# cases: output/05-structured-missing-field, output/06-structured-not-json
# supports: previous_response_id, stateless, stream, text_format

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def structured_answer(text, text_format):
    return text


loop.structured_answer = structured_answer

loop.main()
