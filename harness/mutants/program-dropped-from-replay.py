# loopcheck-mutant
# defect: leaves program items out of the stateless replay (only calls and reasoning are kept)
# caught-by: program/replayed
# cases: program/05-stateless-replay
# supports: stateless,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay_items = loop.replay_items
loop.replay_items = lambda response: [
    item for item in _replay_items(response) if item["type"] != "program"
]

loop.main()
