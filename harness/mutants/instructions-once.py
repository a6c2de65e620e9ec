# loopcheck-mutant
# defect: sends the instructions with the first request only, as if previous_response_id carried them
# caught-by: state/config-resent
# cases: state/01-instructions-every-request
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_next_config = loop.next_config


def next_config(config, response, state):
    config = dict(_next_config(config, response, state))
    config.pop("instructions", None)
    return config


loop.next_config = next_config

loop.main()
