# loopcheck-mutant
# defect: checks an incomplete response only when it holds text or calls, so one holding only reasoning is reported as the empty answer
# caught-by: terminal/outcome
# cases: terminal/10-incomplete-reasoning-only
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_check_status = loop.check_status


def check_status(response):
    if response.status == "incomplete" and all(item.type == "reasoning" for item in response.output):
        return
    _check_status(response)


loop.check_status = check_status

loop.main()
