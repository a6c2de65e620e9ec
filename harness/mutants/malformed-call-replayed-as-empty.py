# loopcheck-mutant
# defect: in a stateless replay, rewrites a call's unparseable arguments to "{}" under its original fc_ id, as the AI SDK does
# caught-by: reasoning/items-unaltered
# cases: dispatch/04-malformed-arguments
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


import json  # noqa: E402

_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data["type"] == "function_call":
        try:
            json.loads(data["arguments"])
        except ValueError:
            data["arguments"] = "{}"
    return data


loop.replay = replay

loop.main()
