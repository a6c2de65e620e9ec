# loopcheck-mutant
# defect: a stateless replay sends reasoning items without their reasoning_text content, keeping only the encrypted_content and summary
# caught-by: reasoning/items-complete
# cases: output/02-reasoning-text
# supports: stateless, stream

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    if data.get("type") == "reasoning":
        data.pop("content", None)
    return data


loop.replay = replay

loop.main()
