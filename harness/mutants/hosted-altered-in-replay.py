# loopcheck-mutant
# defect: a stateless replay rewrites a hosted item (a web search's query trimmed to its first word), so the model sees another search than it ran
# caught-by: hosted/replayed
# cases: hosted/01-search-and-code
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_replay = loop.replay


def replay(item):
    data = _replay(item)
    action = data.get("action")
    if data.get("type") == "web_search_call" and isinstance(action, dict) and action.get("query"):
        action["query"] = action["query"].split()[0]
    return data


loop.replay = replay

loop.main()
