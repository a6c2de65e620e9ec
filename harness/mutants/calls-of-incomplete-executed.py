# loopcheck-mutant
# defect: on an incomplete response, executes the calls whose arguments parse before stopping with reason incomplete
# caught-by: terminal/unfinished-not-executed
# cases: terminal/07-incomplete-with-whole-call
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


import json  # noqa: E402

_check_status = loop.check_status


def check_status(response):
    if response.status == "incomplete":
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            tools = loop.Tools(json.load(f), os.environ["LOOPCHECK_TOOLS_URL"])
        for call in loop.pending_calls(response):
            loop.log(f"  {call.call_id} {call.name} -> {tools.handle(call)}")  # "salvage" the work
    _check_status(response)


loop.check_status = check_status

loop.main()
