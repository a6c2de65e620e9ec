# loopcheck-mutant
# defect: takes a program's calls (those with a caller) for calls the hosted program runs itself, so only direct calls are executed and answered
# caught-by: call-id/answered
# cases: program/01-one-pause
# supports: previous_response_id,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_pending_calls = loop.pending_calls


def pending_calls(response):
    return [call for call in _pending_calls(response) if call.caller is None]


loop.pending_calls = pending_calls

loop.main()
