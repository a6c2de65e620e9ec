# loopcheck-mutant
# defect: the stateless replay leaves out reasoning items and strips the fc_ ids of calls, which the API accepts silently
# caught-by: reasoning/replayed
# cases: reasoning/01-encrypted-retention
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay_items = loop.replay_items


def replay_items(response):
    # The usual "fix" for "function_call was provided without its required reasoning
    # item": drop the ids, and the API stops checking the pairing.
    items = [item for item in _replay_items(response) if item["type"] != "reasoning"]
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


loop.replay_items = replay_items

loop.main()
