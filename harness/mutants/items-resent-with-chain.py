# loopcheck-mutant
# defect: with previous_response_id, the follow-up input repeats the response's reasoning and call items beside the outputs
# caught-by: wire/accepted
# cases: regressions/06-items-resent-with-chain
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_next_input = loop.next_input


def next_input(state, sent, response, outputs):
    if state == "previous_response_id":
        return loop.replay_items(response) + outputs
    return _next_input(state, sent, response, outputs)


loop.next_input = next_input

loop.main()
