# loopcheck-mutant
# defect: turns the SDK retries off, so one transient 500 ends the loop
# caught-by: transport/retried
# cases: transport/01-500-then-success
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


loop.make_client = lambda: loop.openai.OpenAI(max_retries=0)

loop.main()
