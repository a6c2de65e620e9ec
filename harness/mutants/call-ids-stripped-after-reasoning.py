# loopcheck-mutant
# defect: the stateless replay keeps every reasoning item but strips the fc_ id of every function_call, so a call no longer names the reasoning it follows
# caught-by: reasoning/call-ids-kept
# cases: reasoning/03-call-after-reasoning-keeps-id
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    # "Item ids are the server's business; call_id is what pairs a call with its output."
    data = _replay(item)
    if data["type"] == "function_call":
        data.pop("id", None)
    return data


loop.replay = replay

loop.main()
