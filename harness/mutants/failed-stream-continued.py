# loopcheck-mutant
# defect: takes a response that ended in response.failed as an ordinary step and asks the model again, as the AI SDK does
# caught-by: terminal/stopped-at-answer
# cases: stream/08-failed
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_check_status = loop.check_status
_is_final = loop.is_final


def check_status(response):
    if response.status != "failed":
        _check_status(response)


loop.check_status = check_status
loop.is_final = lambda response, calls, requests=(): response.status != "failed" and _is_final(
    response, calls, requests
)

loop.main()
