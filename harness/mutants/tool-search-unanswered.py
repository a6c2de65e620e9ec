# loopcheck-mutant
# defect: answers only function, custom and computer calls, so a client tool_search_call is never answered and the loop ends without the model's answer
# caught-by: call-id/answered
# cases: tools/03-tool-search-loads-tool
# supports: previous_response_id, stateless, tool_search

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

del loop.ANSWER_TYPES["tool_search_call"]

loop.main()
