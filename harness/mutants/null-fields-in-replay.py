# loopcheck-mutant
# defect: replays output items as a plain model dump, so reasoning items carry the fabricated `status: null`
# caught-by: reasoning/input-shape
# cases: regressions/01-null-fields-in-replay
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data["type"] == "reasoning":
        data["status"] = None  # what model_dump() leaves on an item the API sent without it
    return data


loop.replay = replay

loop.main()
