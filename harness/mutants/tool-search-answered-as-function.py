# loopcheck-mutant
# defect: answers a client tool_search_call with a function_call_output listing the tools found, as if the search were a function
# caught-by: call-id/answer-kind
# cases: tools/03-tool-search-loads-tool
# supports: previous_response_id, tool_search

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_tool_search = loop.Tools.handle_tool_search


def handle_tool_search(self, call):
    item = reference_handle_tool_search(self, call)
    return {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps(item["tools"])}


loop.Tools.handle_tool_search = handle_tool_search

loop.main()
