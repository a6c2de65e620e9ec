# loopcheck-mutant
# defect: reads the tool-call budget from a misspelt key, so the task's max_tool_calls is ignored and every call the model asks for runs
# caught-by: budget/max-tool-calls
# cases: budget/04-tool-call-cap
# supports: previous_response_id,budgets

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.tool_call_budget = lambda task: task.get("max_tool_call")

loop.main()
