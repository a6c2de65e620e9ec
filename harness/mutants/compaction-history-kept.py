# loopcheck-mutant
# defect: compacts the context but sends the old items again after the compacted output, so the model sees what the compaction replaced twice
# caught-by: compaction/nothing-resent
# cases: compaction/01-compact-stateless
# supports: stateless, stream, compaction

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_compact = loop.compact


def compact(client, config, sent):
    compacted = _compact(client, config, sent)
    # The user's messages are in the compacted output already; everything else is kept.
    return compacted + [item for item in sent if item.get("role") != "user"]


loop.compact = compact

loop.main()
