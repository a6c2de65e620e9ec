# loopcheck-equivalent
# form: sends the task's tools beside a tool of its own and restricts the model to the task's tools with `tool_choice: {"type": "allowed_tools", "mode": "auto", "tools": [...]}`, the way a fixed tool catalogue is narrowed per task
# cases: state/*, correlation/01-single-call, program/*
# supports: previous_response_id,stateless,conversation,programmatic

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
    """How `allowed_tools` names a tool: a function by name, a hosted tool by type."""
    if tool["type"] == "function":
        return {"type": "function", "name": tool["name"]}
    return {"type": tool["type"]}


def initial_config(task):
    config = _initial_config(task)
    choice = {"type": "allowed_tools", "mode": "auto", "tools": [allowed(t) for t in config["tools"]]}
    return {**config, "tools": config["tools"] + [CATALOGUE_ONLY], "tool_choice": choice}


loop.initial_config = initial_config

loop.main()
