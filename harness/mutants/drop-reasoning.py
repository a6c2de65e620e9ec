# loopcheck-mutant
# defect: the stateless replay leaves out every reasoning item (fc_ ids kept), so the API rejects the follow-up
# caught-by: reasoning/replayed
# cases: reasoning/01-encrypted-retention
# supports: stateless
# fuzz: reachable

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay_items = loop.replay_items
loop.replay_items = lambda response: [
    item for item in _replay_items(response) if item["type"] != "reasoning"
]

loop.main()
