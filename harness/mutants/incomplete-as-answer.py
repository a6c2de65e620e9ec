# loopcheck-mutant
# defect: takes an incomplete response (cut at max_output_tokens) for a complete one and reports its partial text
# caught-by: terminal/outcome
# cases: terminal/05-incomplete-partial-text
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_check_status = loop.check_status


def check_status(response):
    if response.status != "incomplete":
        _check_status(response)


loop.check_status = check_status

loop.main()
