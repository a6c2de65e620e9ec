# loopcheck-equivalent
# form: answers an empty response (no message, no calls) with one nudge, "answer, or call a tool", then takes the next empty response as the empty answer
# cases: terminal/02-empty-output
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_is_final = loop.is_final
_next_input = loop.next_input
nudged = False


def is_final(response, calls, requests=()):
    global nudged
    if _is_final(response, calls, requests) and not response.output and not nudged:
        nudged = True
        return False
    return _is_final(response, calls, requests)


def next_input(state, sent, response, outputs):
    nudge = [] if outputs else [{"role": "user", "content": "Answer, or call a tool."}]
    return _next_input(state, sent, response, outputs) + nudge


loop.is_final = is_final
loop.next_input = next_input

loop.main()
