# loopcheck-mutant
# defect: chains every follow-up to the first response instead of the latest one
# caught-by: state/chained
# cases: correlation/06-three-rounds
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_next_config = loop.next_config


def next_config(config, response, state):
    if "previous_response_id" in config:
        return config
    return _next_config(config, response, state)


loop.next_config = next_config

loop.main()
