# loopcheck-mutant
# defect: reads the round budget from a misspelt key, so the task's max_rounds is ignored (its own default of 10 applies)
# caught-by: budget/max-rounds
# cases: budget/01-endless-tool-calls
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.round_budget = lambda task: task.get("max_round", 10)

loop.main()
