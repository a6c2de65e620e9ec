# loopcheck-mutant
# defect: answers a client tool search with every deferred tool of the catalogue instead of the tools the search found
# caught-by: call-id/result-matches
# cases: tools/03-tool-search-loads-tool
# supports: previous_response_id, tool_search

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

reference_handle_tool_search = loop.Tools.handle_tool_search


def handle_tool_search(self, call):
    item = reference_handle_tool_search(self, call)
    item["tools"] = list(self.catalogue)
    return item


loop.Tools.handle_tool_search = handle_tool_search

loop.main()
