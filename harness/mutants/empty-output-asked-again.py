# loopcheck-mutant
# defect: answers an empty response (no message, no calls) with "please answer" over and over until the round budget runs out
# caught-by: terminal/stopped-at-answer
# cases: terminal/02-empty-output
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_is_final = loop.is_final
_next_input = loop.next_input


def is_final(response, calls, requests=()):
    return _is_final(response, calls, requests) and response.output_text != ""


def next_input(state, sent, response, outputs):
    nudge = [] if outputs else [{"role": "user", "content": "Please answer, or call a tool."}]
    return _next_input(state, sent, response, outputs) + nudge


loop.is_final = is_final
loop.next_input = next_input

loop.main()
