# loopcheck-mutant
# defect: has no round limit (the task's max_rounds is ignored and every round's outputs are sent), so a model that keeps calling tools is answered forever
# caught-by: budget/max-rounds
# cases: budget/01-endless-tool-calls
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

loop.round_budget = lambda task: 10**9
loop.has_room = lambda round_, max_rounds: True

loop.main()
