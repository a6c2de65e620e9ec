# loopcheck-mutant
# defect: checks for incomplete but not for failed, so a failed response is reported as an (empty) answer
# caught-by: terminal/outcome
# cases: terminal/03-failed-status
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_check_status = loop.check_status


def check_status(response):
    if response.status != "failed":
        _check_status(response)


loop.check_status = check_status

loop.main()
