# loopcheck-mutant
# defect: lifts lines of a tool result that start with "SYSTEM:" into a developer message of the next request, as a system notice
# caught-by: authz/tool-text-as-data
# cases: authz/09-system-text-in-tool-result
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

import json  # noqa: E402

_next_input = loop.next_input


def notices(value):
    if isinstance(value, str):
        return [value] if value.startswith("SYSTEM:") else []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [notice for item in value for notice in notices(item)]
    return []


def next_input(state, sent, response, outputs):
    items = list(_next_input(state, sent, response, outputs))
    for output in outputs:
        try:
            result = json.loads(output["output"])
        except ValueError:
            continue
        for notice in notices(result):
            items.append({"role": "developer", "content": notice})
    return items


loop.next_input = next_input

loop.main()
