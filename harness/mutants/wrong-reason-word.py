# loopcheck-mutant
# defect: reports an incomplete response as failed with reason "truncated" instead of the recognised word "incomplete"
# caught-by: terminal/reason
# cases: terminal/05-incomplete-partial-text
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_check_status = loop.check_status


def check_status(response):
    try:
        _check_status(response)
    except loop.Stop as stop:
        if stop.reason == "incomplete":
            raise loop.Stop("truncated", stop.detail) from None
        raise


loop.check_status = check_status

loop.main()
