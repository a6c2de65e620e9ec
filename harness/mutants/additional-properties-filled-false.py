# loopcheck-mutant
# defect: adds `additionalProperties: false` to every function tool schema that has none (a tool adapter tightening schemas for strict mode), so a non-strict tool that accepts extra keys is sent as a tighter one
# caught-by: state/config-resent
# cases: dispatch/15-additional-properties-omitted
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config


def tightened(tool):
    if tool.get("type") != "function" or "parameters" not in tool:
        return tool
    return {**tool, "parameters": {"additionalProperties": False, **tool["parameters"]}}


def initial_config(task):
    config = _initial_config(task)
    return {**config, "tools": [tightened(tool) for tool in config["tools"]]}


loop.initial_config = initial_config

loop.main()
