# loopcheck-mutant
# defect: answers every tool_search_call, a server-executed one too, with a tool_search_output of its own
# caught-by: dispatch/hosted-not-answered
# cases: tools/04-tool-search-hosted
# supports: previous_response_id, stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def pending_calls(response):
    return [item for item in response.output if item.type in loop.ANSWER_TYPES]


loop.pending_calls = pending_calls

loop.main()
