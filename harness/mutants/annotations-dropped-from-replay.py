# loopcheck-mutant
# defect: a stateless replay sends assistant messages with their output_text annotations emptied, so the model loses which sources it cited
# caught-by: reasoning/items-complete
# cases: output/01-annotations
# supports: stateless, stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data.get("type") == "message":
        for part in data.get("content") or []:
            if part.get("type") == "output_text":
                part["annotations"] = []
    return data


loop.replay = replay

loop.main()
