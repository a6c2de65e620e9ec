# loopcheck-mutant
# defect: sends previous_response_id in stateless mode too, pointing at a response that was never stored
# caught-by: wire/accepted
# cases: correlation/01-single-call
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_next_config = loop.next_config
loop.next_config = lambda config, response, state: _next_config(
    config, response, "previous_response_id"
)

loop.main()
