# loopcheck-mutant
# defect: a stateless replay rebuilds function_call items from its own record, putting the call_id in the item's id
# caught-by: wire/accepted
# cases: regressions/04-call-id-as-item-id
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data["type"] == "function_call":
        data["id"] = data["call_id"]
    return data


loop.replay = replay

loop.main()
