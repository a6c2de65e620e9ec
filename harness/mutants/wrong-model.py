# loopcheck-mutant
# defect: ignores the task's model and sends a hard-coded one (gpt-4o)
# caught-by: state/config-resent
# cases: correlation/01-single-call
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config
loop.initial_config = lambda task: {**_initial_config(task), "model": "gpt-4o"}

loop.main()
