# loopcheck-mutant
# defect: reports a refusal as a completed answer (with the empty output_text)
# caught-by: terminal/outcome
# cases: terminal/09-refusal
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.final_answer = lambda response: response.output_text

loop.main()
