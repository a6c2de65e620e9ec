# loopcheck-mutant
# defect: ignores tool_timeout_ms and waits for a tool request as long as it takes (its own 30 s limit), so one slow tool holds up the whole round
# caught-by: budget/tool-timeout
# cases: budget/06-slow-tool
# supports: previous_response_id,budgets

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.tool_timeout = lambda task: None

loop.main()
