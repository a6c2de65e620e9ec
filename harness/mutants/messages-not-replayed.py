# loopcheck-mutant
# defect: replays only reasoning and calls in stateless mode, dropping assistant messages (preambles) from the context
# caught-by: reasoning/items-in-order
# cases: correlation/03-mixed-items
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay_items = loop.replay_items
loop.replay_items = lambda response: [
    item for item in _replay_items(response) if item["type"] != "message"
]

loop.main()
