# loopcheck-mutant
# defect: narrows a wider tool catalogue with `tool_choice.allowed_tools` but lists one of its own tools there beside the task's, so the model may still call a tool the task never allowed
# caught-by: state/config-resent
# cases: correlation/01-single-call
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

CATALOGUE_ONLY = {
    "type": "function",
    "name": "open_support_ticket",
    "description": "Open a support ticket for a human agent.",
    "parameters": {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
        "additionalProperties": False,
    },
    "strict": True,
}
_initial_config = loop.initial_config


def allowed(tool):
    if tool["type"] == "function":
        return {"type": "function", "name": tool["name"]}
    return {"type": tool["type"]}


def initial_config(task):
    config = _initial_config(task)
    tools = config["tools"] + [CATALOGUE_ONLY]
    choice = {"type": "allowed_tools", "mode": "auto", "tools": [allowed(t) for t in tools]}
    return {**config, "tools": tools, "tool_choice": choice}


loop.initial_config = initial_config

loop.main()
