# loopcheck-mutant
# defect: a stateless replay skips items of types it does not know, so the compaction item a response carried never goes back and the compacted context is lost
# caught-by: compaction/replayed
# cases: compaction/02-server-side
# supports: stateless, stream, compaction

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


KNOWN = {"reasoning", "message", "function_call", "custom_tool_call", "program", "program_output"}


def replay_items(response):
    return [loop.replay(item) for item in response.output if item.type in KNOWN]


loop.replay_items = replay_items

loop.main()
