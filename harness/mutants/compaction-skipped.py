# loopcheck-mutant
# defect: ignores compact_after_rounds and keeps sending the whole history, so the context is never compacted
# caught-by: compaction/compacted
# cases: compaction/01-compact-stateless
# supports: stateless, stream, compaction

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


def compacts_now(task, round_):
    return False


loop.compacts_now = compacts_now

loop.main()
