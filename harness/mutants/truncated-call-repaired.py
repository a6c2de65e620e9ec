# loopcheck-mutant
# defect: on an incomplete response, closes the truncated arguments of a cut-off call and runs it before stopping, as LangChain does
# caught-by: terminal/unfinished-not-executed
# cases: stream/09-incomplete-truncated-call, stream/10-incomplete-after-whole-call
# supports: previous_response_id,stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


import json  # noqa: E402

_check_status = loop.check_status


def repaired(arguments):
    """Closes an open string and the braces left open: '{"q": "ab' -> '{"q": "ab"}'."""
    text = arguments
    if text.count('"') % 2:
        text += '"'
    return text + "}" * (text.count("{") - text.count("}"))


def check_status(response):
    if response.status == "incomplete":
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            tools = loop.Tools(json.load(f), os.environ["LOOPCHECK_TOOLS_URL"])
        for call in loop.pending_calls(response):
            call.arguments = repaired(call.arguments)
            loop.log(f"  {call.call_id} {call.name} -> {tools.handle(call)}")
    _check_status(response)


loop.check_status = check_status

loop.main()
