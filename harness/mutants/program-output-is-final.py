# loopcheck-mutant
# defect: takes a response without calls as the end even when it only holds a program_output
# caught-by: program/continued
# cases: program/04-output-without-final-message
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.is_final = lambda response, calls, requests=(): not calls and not requests

loop.main()
