# loopcheck-mutant
# defect: takes any response with a message as the answer, even when calls arrive beside it
# caught-by: terminal/calls-beside-message
# cases: terminal/01-message-beside-calls
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_is_final = loop.is_final
loop.is_final = lambda response, calls, requests=(): _is_final(response, calls, requests) or any(
    item.type == "message" for item in response.output
)

loop.main()
