# loopcheck-mutant
# defect: rebuilds replayed reasoning items from its own record, stamping the output-only status "completed" on them
# caught-by: reasoning/input-shape
# cases: reasoning/01-encrypted-retention
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data["type"] == "reasoning":
        data["status"] = "completed"
    return data


loop.replay = replay

loop.main()
