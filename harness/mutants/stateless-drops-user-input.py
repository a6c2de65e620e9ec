# loopcheck-mutant
# defect: rebuilds the stateless context from the model output items and call outputs only, dropping the user's own input
# caught-by: state/input-replayed
# cases: correlation/06-three-rounds
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_next_input = loop.next_input


def next_input(state, sent, response, outputs):
    return [item for item in _next_input(state, sent, response, outputs) if item.get("role") != "user"]


loop.next_input = next_input

loop.main()
