# loopcheck-mutant
# defect: executes the calls of the last round its budget allows, whose outputs can never be sent back
# caught-by: budget/last-round-idle
# cases: budget/03-single-round
# supports: previous_response_id
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.has_room = lambda round_, max_rounds: True  # the for loop still bounds the requests

loop.main()
