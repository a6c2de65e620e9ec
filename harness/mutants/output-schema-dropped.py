# loopcheck-mutant
# defect: serializes function tools from a fixed list of fields (type, name, description, parameters, strict, allowed_callers), so a program-callable tool's output_schema never reaches the model
# caught-by: state/config-resent
# cases: program/09-output-schema-resent
# supports: previous_response_id,stateless,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

FIELDS = ("type", "name", "description", "parameters", "strict", "allowed_callers")
_initial_config = loop.initial_config


def serialize(tool):
    if tool.get("type") != "function":
        return tool
    return {key: tool[key] for key in FIELDS if key in tool}


def initial_config(task):
    config = _initial_config(task)
    return {**config, "tools": [serialize(tool) for tool in config["tools"]]}


loop.initial_config = initial_config

loop.main()
