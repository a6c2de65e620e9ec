# loopcheck-mutant
# defect: builds each request from a fixed list of parameters that leaves out context_management, so the server never compacts the context the task asked it to
# caught-by: compaction/compacted
# cases: compaction/02-server-side
# supports: previous_response_id, stateless, stream, compaction

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    config.pop("context_management", None)
    return config


loop.initial_config = initial_config

loop.main()
