# loopcheck-mutant
# defect: replays a response's reasoning items first and its other items after, breaking each reasoning/item pairing
# caught-by: reasoning/items-in-order
# cases: reasoning/02-two-reasoning-items-one-turn
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay_items = loop.replay_items


def replay_items(response):
    items = _replay_items(response)
    return [i for i in items if i["type"] == "reasoning"] + [
        i for i in items if i["type"] != "reasoning"
    ]


loop.replay_items = replay_items

loop.main()
