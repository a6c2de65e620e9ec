# loopcheck-mutant
# defect: never sends background: true, whatever the task asks
# caught-by: background/requested
# cases: background/01-polling
# supports: previous_response_id,background

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    config.pop("background", None)
    return config


loop.initial_config = initial_config

loop.main()
