# loopcheck-mutant
# defect: loads the tools a client search found through a converter that keeps only type, name and parameters, so the model gets them without their descriptions
# caught-by: dispatch/loaded-from-catalogue
# cases: tools/03-tool-search-loads-tool
# supports: previous_response_id, tool_search

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_tool_search = loop.Tools.handle_tool_search


def handle_tool_search(self, call):
    item = reference_handle_tool_search(self, call)
    item["tools"] = [{k: tool[k] for k in ("type", "name", "parameters") if k in tool} for tool in item["tools"]]
    return item


loop.Tools.handle_tool_search = handle_tool_search

loop.main()
