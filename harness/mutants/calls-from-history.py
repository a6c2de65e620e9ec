# loopcheck-mutant
# defect: collects the calls of every response so far, not only the latest, so earlier calls run again
# caught-by: effects/at-most-once
# cases: correlation/06-three-rounds
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_pending_calls = loop.pending_calls
_seen = []


def pending_calls(response):
    _seen.extend(_pending_calls(response))
    return list(_seen)


loop.pending_calls = pending_calls

loop.main()
