# loopcheck-mutant
# defect: takes a response cut by the content filter for a complete one and reports the filtered partial text as the answer
# caught-by: terminal/outcome
# cases: output/03-content-filter
# supports: previous_response_id, stateless, stream
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_check_status = loop.check_status


def check_status(response):
    details = response.incomplete_details
    if response.status == "incomplete" and details and details.reason == "content_filter":
        return
    _check_status(response)


loop.check_status = check_status

loop.main()
