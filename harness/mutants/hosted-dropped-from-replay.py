# loopcheck-mutant
# defect: a stateless replay leaves out the hosted tools' items (web_search_call, mcp_call, ...), keeping only what it knows
# caught-by: hosted/replayed
# cases: hosted/01-search-and-code, mcp/04-list-tools-and-call
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


KNOWN = {"message", "reasoning", "function_call", "custom_tool_call", "program", "program_output"}

_replay_items = loop.replay_items


def replay_items(response):
    return [item for item in _replay_items(response) if item["type"] in KNOWN]


loop.replay_items = replay_items

loop.main()
