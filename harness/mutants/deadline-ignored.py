# loopcheck-mutant
# defect: never starts the case's clock, so deadline_ms is ignored and the loop runs on until max_rounds
# caught-by: budget/deadline
# cases: budget/05-deadline
# supports: previous_response_id,budgets

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.start_clock = lambda task: None

loop.main()
