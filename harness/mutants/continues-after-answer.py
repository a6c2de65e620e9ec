# loopcheck-mutant
# defect: asks the model again whenever a final turn holds reasoning ("still thinking"), going on past the answer
# caught-by: terminal/stopped-at-answer
# cases: terminal/04-final-answer-after-reasoning
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_is_final = loop.is_final
loop.is_final = lambda response, calls, requests=(): _is_final(response, calls, requests) and not any(
    item.type == "reasoning" for item in response.output
)

loop.main()
