# loopcheck-mutant
# defect: replays reasoning items without their encrypted_content, to keep the context small
# caught-by: reasoning/replayed
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
        data.pop("encrypted_content", None)
    return data


loop.replay = replay

loop.main()
