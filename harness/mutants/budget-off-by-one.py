# loopcheck-mutant
# defect: stops one round early (counts the first request as round 0), failing a loop that is within its budget
# caught-by: terminal/outcome
# cases: budget/02-final-on-last-round
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.has_room = lambda round_, max_rounds: round_ + 1 < max_rounds

loop.main()
