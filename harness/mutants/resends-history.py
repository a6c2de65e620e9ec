# loopcheck-mutant
# defect: resends the whole history beside previous_response_id, duplicating items the server already holds
# caught-by: state/no-resend
# cases: correlation/06-three-rounds
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_next_input = loop.next_input


def next_input(state, sent, response, outputs):
    sent = [{"role": "user", "content": sent}] if isinstance(sent, str) else sent
    return _next_input("stateless", sent, response, outputs)


loop.next_input = next_input

loop.main()
