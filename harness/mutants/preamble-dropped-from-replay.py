# loopcheck-mutant
# defect: a stateless replay keeps reasoning and calls but leaves out the assistant messages of a turn that has calls
# caught-by: reasoning/items-in-order
# cases: regressions/05-preamble-dropped-from-replay
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay_items = loop.replay_items


def replay_items(response):
    return [item for item in _replay_items(response) if item["type"] != "message"]


loop.replay_items = replay_items

loop.main()
